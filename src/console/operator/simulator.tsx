/**
 * The operator's carrier simulator: routes (how a called number answers),
 * and playing the network — an incoming call (to a number, or to a SIP
 * domain from a source address) or message to a number.
 */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useState } from "react";
import {
  SimulatorRoute_Audio as Audio,
  SimulatorRoute_Outcome as Outcome,
  SimulatorAdmin,
} from "../../../gen/switchboard/admin/v1/simulator_pb.js";
import { useSession } from "../app.js";
import { ErrorBanner } from "../kit/errors.js";
import { EnumSelect, TextAreaField, TextField } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { enumName, lastSegment, time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";
import { href } from "../router.js";

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
  const refresh = useRefresh(SimulatorAdmin);
  const list = useInfiniteQuery(SimulatorAdmin.method.listRoutes, { pageSize: 50, pageToken: "" }, PAGED);
  const [prefix, setPrefix] = useState("");
  const [outcome, setOutcome] = useState<Outcome>(Outcome.ANSWER);
  const [digits, setDigits] = useState("");
  const create = useMutation(SimulatorAdmin.method.createRoute, { onSuccess: refresh });
  const remove = useMutation(SimulatorAdmin.method.deleteRoute, { onSuccess: refresh });
  const prefixInvalid = !PREFIX.test(prefix);
  const digitsInvalid = !DIGITS.test(digits);
  const submit = () => create.mutate({ route: { prefix, outcome, digits, audio: Audio.SPEECH } });
  const rows = pagedRows(list, (p) => p.routes);
  return (
    <section aria-labelledby="routes-title">
      <h2 id="routes-title">Routes</h2>
      <FormCard
        label="Add a route"
        heading={null}
        onSubmit={submit}
        submit="Add route"
        disabled={create.isPending || prefixInvalid || digitsInvalid}
        error={create.error}
        errorTitle="Could not add the route"
      >
        <div className="row">
          <TextField
            label="Numbers starting with"
            id="route-prefix"
            invalid={prefixInvalid && "A + and digits; empty matches every number."}
            value={prefix}
            onChange={setPrefix}
          />
          <EnumSelect
            label="Outcome"
            id="route-outcome"
            enumType={Outcome}
            options={OUTCOMES}
            value={outcome}
            onChange={setOutcome}
          />
          <TextField
            label="Keys pressed after answering"
            id="route-digits"
            invalid={digitsInvalid && "Digits, * and #."}
            value={digits}
            onChange={setDigits}
          />
        </div>
      </FormCard>
      <ListTable
        list={list}
        errorTitle="Could not list routes"
        notices={<ErrorBanner error={remove.error} title="Could not delete the route" />}
        loading={null}
        caption="Routes"
        rows={rows}
        rowKey={(r) => r.name}
        empty="No routes: every call is answered, after 2 s."
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
    </section>
  );
}

/** To and From of an injected call or message; ids `${idPrefix}-to`, `${idPrefix}-from`. */
function useEnds() {
  const [to, setTo] = useState("");
  const [from, setFrom] = useState("");
  return { to, setTo, from, setFrom, ends: { to: to.trim(), from: from.trim() } };
}

function EndsFields({
  idPrefix,
  ends,
  fromRequired,
}: {
  idPrefix: string;
  ends: ReturnType<typeof useEnds>;
  fromRequired: boolean;
}) {
  return (
    <div className="row">
      <TextField
        label="To (a provisioned number)"
        id={`${idPrefix}-to`}
        required
        inputMode="tel"
        value={ends.to}
        onChange={ends.setTo}
      />
      <TextField
        label="From"
        id={`${idPrefix}-from`}
        required={fromRequired}
        inputMode="tel"
        value={ends.from}
        onChange={ends.setFrom}
      />
    </div>
  );
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

function InjectCall() {
  const { session } = useSession();
  const ends = useEnds();
  const [isPrivate, setIsPrivate] = useState(false);
  const [sip, setSip] = useState(false);
  const [sipDomain, setSipDomain] = useState("");
  const [sourceIp, setSourceIp] = useState("");
  const [user, setUser] = useState("");
  const ipBad = sourceIp !== "" && !IPV4.test(sourceIp.trim());
  const inject = useMutation(SimulatorAdmin.method.injectIncomingCall);
  const submit = () =>
    inject.mutate({
      ...ends.ends,
      isPrivate,
      ...(sip ? { sipDomain: sipDomain.trim(), sourceIp: sourceIp.trim(), user: user.trim() } : {}),
    });
  const call = inject.data?.call ?? "";
  return (
    <FormCard
      label="Inject an incoming call"
      heading="An incoming call"
      onSubmit={submit}
      submit="Ring the number"
      disabled={inject.isPending || (sip && ipBad)}
      status={
        inject.isSuccess && (
          <p role="status">
            Call{" "}
            {session.project !== "" && call.startsWith(`${session.project}/`) ? (
              <a href={href("call", lastSegment(call))}>{call}</a>
            ) : (
              <code>{call}</code>
            )}{" "}
            started.
          </p>
        )
      }
      error={inject.error}
      errorTitle="Could not inject the call"
    >
      <EndsFields idPrefix="inject-call" ends={ends} fromRequired={false} />
      <div className="row">
        <div className="check">
          <input
            id="inject-call-private"
            type="checkbox"
            checked={isPrivate}
            onChange={(e) => setIsPrivate(e.target.checked)}
          />
          <label htmlFor="inject-call-private">Withhold the caller's number</label>
        </div>
        <div className="check">
          <input
            id="inject-call-sip"
            type="checkbox"
            checked={sip}
            onChange={(e) => setSip(e.target.checked)}
          />
          <label htmlFor="inject-call-sip">A call to a SIP domain (To is then the called user)</label>
        </div>
      </div>
      {sip && (
        <div className="row">
          <TextField
            label="SIP domain (FQDN)"
            id="inject-call-domain"
            hint="Empty: matched by the source address among domain-optional domains."
            value={sipDomain}
            onChange={setSipDomain}
          />
          <TextField
            label="Source IPv4 address"
            id="inject-call-source"
            invalid={ipBad && "An IPv4 address, e.g. 203.0.113.10."}
            inputMode="decimal"
            value={sourceIp}
            onChange={setSourceIp}
          />
          <TextField
            label="Authenticated as user (optional)"
            id="inject-call-user"
            value={user}
            onChange={setUser}
          />
        </div>
      )}
    </FormCard>
  );
}

function InjectMessage() {
  const ends = useEnds();
  const [body, setBody] = useState("");
  const inject = useMutation(SimulatorAdmin.method.injectIncomingMessage);
  return (
    <FormCard
      label="Inject an incoming message"
      heading="An incoming message"
      onSubmit={() => inject.mutate({ ...ends.ends, body })}
      submit="Deliver the message"
      disabled={inject.isPending}
      status={inject.isSuccess && <p role="status">Message delivered to the number.</p>}
      error={inject.error}
      errorTitle="Could not inject the message"
    >
      <EndsFields idPrefix="inject-message" ends={ends} fromRequired />
      <TextAreaField label="Body" id="inject-message-body" rows={2} value={body} onChange={setBody} />
    </FormCard>
  );
}
