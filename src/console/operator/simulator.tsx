/**
 * The operator's carrier simulator: routes (how a called number answers),
 * and playing the network — an incoming call or message to a number.
 */
import { createConnectQueryKey, useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import {
  SimulatorRoute_Audio as Audio,
  SimulatorRoute_Outcome as Outcome,
  SimulatorAdmin,
} from "../../../gen/switchboard/admin/v1/simulator_pb.js";
import { ErrorBanner } from "../kit/errors.js";
import { enumName, time } from "../kit/format.js";
import { Field, Page } from "../kit/page.js";
import { Table } from "../kit/table.js";

const OUTCOMES = [Outcome.ANSWER, Outcome.BUSY, Outcome.REJECT, Outcome.NO_ANSWER, Outcome.FAIL];
const PREFIX = /^(\+[0-9]{0,15})?$/;
const DIGITS = /^[0-9*#]{0,64}$/;

export default function SimulatorPage() {
  return (
    <Page title="Simulator">
      <Routes />
      <InjectCall />
      <InjectMessage />
    </Page>
  );
}

function Routes() {
  const queryClient = useQueryClient();
  const refresh = () =>
    queryClient.invalidateQueries({
      queryKey: createConnectQueryKey({ schema: SimulatorAdmin, cardinality: undefined }),
    });
  const list = useInfiniteQuery(
    SimulatorAdmin.method.listRoutes,
    { pageSize: 50, pageToken: "" },
    { pageParamKey: "pageToken", getNextPageParam: (l) => l.nextPageToken || undefined },
  );
  const [prefix, setPrefix] = useState("");
  const [outcome, setOutcome] = useState<Outcome>(Outcome.ANSWER);
  const [digits, setDigits] = useState("");
  const create = useMutation(SimulatorAdmin.method.createRoute, { onSuccess: refresh });
  const remove = useMutation(SimulatorAdmin.method.deleteRoute, { onSuccess: refresh });
  const prefixInvalid = !PREFIX.test(prefix);
  const digitsInvalid = !DIGITS.test(digits);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({ route: { prefix, outcome, digits, audio: Audio.SPEECH } });
  };
  const rows = list.data?.pages.flatMap((p) => p.routes) ?? [];
  return (
    <section aria-labelledby="routes-title">
      <h2 id="routes-title">Routes</h2>
      <form className="card" onSubmit={submit} aria-label="Add a route">
        <div className="row">
          <Field
            label="Numbers starting with"
            id="route-prefix"
            hint={prefixInvalid ? "A + and digits; empty matches every number." : undefined}
          >
            <input
              id="route-prefix"
              value={prefix}
              aria-invalid={prefixInvalid}
              onChange={(e) => setPrefix(e.target.value)}
            />
          </Field>
          <Field label="Outcome" id="route-outcome">
            <select
              id="route-outcome"
              value={outcome}
              onChange={(e) => setOutcome(Number(e.target.value) as Outcome)}
            >
              {OUTCOMES.map((o) => (
                <option key={o} value={o}>
                  {enumName(Outcome, o)}
                </option>
              ))}
            </select>
          </Field>
          <Field
            label="Keys pressed after answering"
            id="route-digits"
            hint={digitsInvalid ? "Digits, * and #." : undefined}
          >
            <input
              id="route-digits"
              value={digits}
              aria-invalid={digitsInvalid}
              onChange={(e) => setDigits(e.target.value)}
            />
          </Field>
        </div>
        <button
          type="submit"
          className="primary"
          disabled={create.isPending || prefixInvalid || digitsInvalid}
        >
          Add route
        </button>
        <ErrorBanner error={create.error} title="Could not add the route" />
      </form>
      <ErrorBanner error={list.error} title="Could not list routes" />
      <ErrorBanner error={remove.error} title="Could not delete the route" />
      {!list.isPending && (
        <Table
          caption="Routes"
          rows={rows}
          rowKey={(r) => r.name}
          empty="No routes: every call is answered, after 2 s."
          hasMore={list.hasNextPage}
          loadingMore={list.isFetchingNextPage}
          onLoadMore={() => void list.fetchNextPage()}
          columns={[
            { header: "Prefix", cell: (r) => <code>{r.prefix || "(every number)"}</code> },
            { header: "Outcome", cell: (r) => enumName(Outcome, r.outcome) },
            { header: "Keys", cell: (r) => r.digits },
            { header: "Created", cell: (r) => time(r.createTime) },
            {
              header: "Actions",
              cell: (r) => (
                <button
                  type="button"
                  onClick={() => remove.mutate({ name: r.name })}
                  aria-label={`Delete route ${r.prefix || "for every number"}`}
                >
                  Delete
                </button>
              ),
            },
          ]}
        />
      )}
    </section>
  );
}

function InjectCall() {
  const [to, setTo] = useState("");
  const [from, setFrom] = useState("");
  const inject = useMutation(SimulatorAdmin.method.injectIncomingCall);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    inject.mutate({ to: to.trim(), from: from.trim() });
  };
  return (
    <form className="card" onSubmit={submit} aria-label="Inject an incoming call">
      <h2>An incoming call</h2>
      <div className="row">
        <Field label="To (a provisioned number)" id="inject-call-to">
          <input
            id="inject-call-to"
            required
            inputMode="tel"
            value={to}
            onChange={(e) => setTo(e.target.value)}
          />
        </Field>
        <Field label="From" id="inject-call-from">
          <input
            id="inject-call-from"
            inputMode="tel"
            value={from}
            onChange={(e) => setFrom(e.target.value)}
          />
        </Field>
      </div>
      <button type="submit" className="primary" disabled={inject.isPending}>
        Ring the number
      </button>
      {inject.isSuccess && (
        <p role="status">
          Call <code>{inject.data.call}</code> started.
        </p>
      )}
      <ErrorBanner error={inject.error} title="Could not inject the call" />
    </form>
  );
}

function InjectMessage() {
  const [to, setTo] = useState("");
  const [from, setFrom] = useState("");
  const [body, setBody] = useState("");
  const inject = useMutation(SimulatorAdmin.method.injectIncomingMessage);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    inject.mutate({ to: to.trim(), from: from.trim(), body });
  };
  return (
    <form className="card" onSubmit={submit} aria-label="Inject an incoming message">
      <h2>An incoming message</h2>
      <div className="row">
        <Field label="To (a provisioned number)" id="inject-message-to">
          <input
            id="inject-message-to"
            required
            inputMode="tel"
            value={to}
            onChange={(e) => setTo(e.target.value)}
          />
        </Field>
        <Field label="From" id="inject-message-from">
          <input
            id="inject-message-from"
            required
            inputMode="tel"
            value={from}
            onChange={(e) => setFrom(e.target.value)}
          />
        </Field>
      </div>
      <Field label="Body" id="inject-message-body">
        <textarea id="inject-message-body" rows={2} value={body} onChange={(e) => setBody(e.target.value)} />
      </Field>
      <button type="submit" className="primary" disabled={inject.isPending}>
        Deliver the message
      </button>
      {inject.isSuccess && <p role="status">Message delivered to the number.</p>}
      <ErrorBanner error={inject.error} title="Could not inject the message" />
    </form>
  );
}
