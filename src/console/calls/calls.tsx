/**
 * A project's calls: the list filtered by state and direction, refreshed
 * live (polling), and placing a call.
 */
import { createConnectQueryKey, useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { CallRecordingConfig_CallRecordingTrigger as Trigger } from "../../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import {
  Calls,
  Call_Direction as Direction,
  Call_State as State,
} from "../../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { enumName, lastSegment, time } from "../kit/format.js";
import { parseLines } from "../kit/lists.js";
import { Field, Page } from "../kit/page.js";
import { Table } from "../kit/table.js";
import { href } from "../router.js";
import { POLL_MS, STATES } from "./states.js";

export default function CallsPage() {
  const { session } = useSession();
  const canCreate = useCan(Calls.method.createCall, { parent: session.project });
  const [state, setState] = useState<State>(State.STATE_UNSPECIFIED);
  const [direction, setDirection] = useState<Direction>(Direction.DIRECTION_UNSPECIFIED);
  const filter = [
    state === State.STATE_UNSPECIFIED ? "" : `state = ${enumName(State, state)}`,
    direction === Direction.DIRECTION_UNSPECIFIED ? "" : `direction = ${enumName(Direction, direction)}`,
  ]
    .filter((f) => f !== "")
    .join(" AND ");
  const list = useInfiniteQuery(
    Calls.method.listCalls,
    { parent: session.project, pageSize: 25, pageToken: "", filter },
    {
      pageParamKey: "pageToken",
      getNextPageParam: (l) => l.nextPageToken || undefined,
      refetchInterval: POLL_MS,
    },
  );
  const rows = list.data?.pages.flatMap((p) => p.calls) ?? [];
  return (
    <Page title="Calls">
      {canCreate === true && <CreateCall />}
      <div className="filters row">
        <Field label="State" id="calls-state">
          <select id="calls-state" value={state} onChange={(e) => setState(Number(e.target.value) as State)}>
            <option value={State.STATE_UNSPECIFIED}>Any</option>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {enumName(State, s)}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Direction" id="calls-direction">
          <select
            id="calls-direction"
            value={direction}
            onChange={(e) => setDirection(Number(e.target.value) as Direction)}
          >
            <option value={Direction.DIRECTION_UNSPECIFIED}>Any</option>
            <option value={Direction.OUTGOING}>OUTGOING</option>
            <option value={Direction.INCOMING}>INCOMING</option>
          </select>
        </Field>
        <p className="muted" aria-live="off">
          Refreshed every {POLL_MS / 1000} s.
        </p>
      </div>
      <ErrorBanner error={list.error} title="Could not list calls" />
      {list.isPending ? (
        <p role="status">Loading…</p>
      ) : (
        <Table
          caption="Calls"
          rows={rows}
          rowKey={(c) => c.name}
          empty={filter === "" ? "No calls yet." : "No call matches these filters."}
          hasMore={list.hasNextPage}
          loadingMore={list.isFetchingNextPage}
          onLoadMore={() => void list.fetchNextPage()}
          columns={[
            {
              header: "Call",
              cell: (c) => <a href={href("call", lastSegment(c.name))}>{lastSegment(c.name)}</a>,
            },
            {
              header: "State",
              cell: (c) => (
                <span className="state" data-state={enumName(State, c.state)}>
                  {enumName(State, c.state)}
                </span>
              ),
            },
            { header: "Direction", cell: (c) => enumName(Direction, c.direction) },
            { header: "From", cell: (c) => c.from },
            { header: "To", cell: (c) => c.to },
            { header: "Created", cell: (c) => time(c.createTime) },
          ]}
        />
      )}
    </Page>
  );
}

function CreateCall() {
  const { session } = useSession();
  const queryClient = useQueryClient();
  const [to, setTo] = useState("");
  const [from, setFrom] = useState("");
  const [handlers, setHandlers] = useState("");
  const [stateUpdateUri, setStateUpdateUri] = useState("");
  const [record, setRecord] = useState(false);
  const create = useMutation(Calls.method.createCall, {
    onSuccess: () =>
      queryClient.invalidateQueries({
        queryKey: createConnectQueryKey({ schema: Calls, cardinality: undefined }),
      }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      parent: session.project,
      call: {
        to: to.trim(),
        from: from.trim(),
        options: {
          handlerUris: parseLines(handlers),
          stateUpdateUri: stateUpdateUri.trim(),
          ...(record ? { recording: { trigger: Trigger.ANSWER } } : {}),
        },
      },
    });
  };
  return (
    <form className="card" onSubmit={submit} aria-label="Place a call">
      <h2>Place a call</h2>
      <div className="row">
        <Field label="To" id="call-to">
          <input
            id="call-to"
            required
            inputMode="tel"
            placeholder="+61491570157"
            value={to}
            onChange={(e) => setTo(e.target.value)}
          />
        </Field>
        <Field label="From (a number of the project)" id="call-from">
          <input
            id="call-from"
            required
            inputMode="tel"
            placeholder="+61491570110"
            value={from}
            onChange={(e) => setFrom(e.target.value)}
          />
        </Field>
      </div>
      <Field label="Handler URI (VoiceML)" id="call-handler">
        <input
          id="call-handler"
          required
          type="url"
          value={handlers}
          onChange={(e) => setHandlers(e.target.value)}
        />
      </Field>
      <Field label="State update URI (optional)" id="call-state-uri">
        <input
          id="call-state-uri"
          type="url"
          value={stateUpdateUri}
          onChange={(e) => setStateUpdateUri(e.target.value)}
        />
      </Field>
      <div className="check">
        <input
          id="call-record"
          type="checkbox"
          checked={record}
          onChange={(e) => setRecord(e.target.checked)}
        />
        <label htmlFor="call-record">Record the call from its answer</label>
      </div>
      <button type="submit" className="primary" disabled={create.isPending}>
        Place call
      </button>
      {create.isSuccess && (
        <p role="status">
          Placed <a href={href("call", lastSegment(create.data.name))}>{lastSegment(create.data.name)}</a>.
        </p>
      )}
      <ErrorBanner error={create.error} title="Could not place the call" />
    </form>
  );
}
