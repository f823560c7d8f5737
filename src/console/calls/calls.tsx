/**
 * A project's calls: the list filtered by state and direction, refreshed
 * live (polling), and placing a call.
 */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useState } from "react";
import {
  TranscribeOption,
  CallRecordingConfig_CallRecordingTrigger as Trigger,
} from "../../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import {
  Calls,
  Call_Direction as Direction,
  Call_State as State,
} from "../../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { andFilter, EnumFilterSelect, TextField, useEnumFilter } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { enumName, lastSegment, time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { parseLines } from "../kit/lists.js";
import { Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";
import { href } from "../router.js";
import { POLL_MS, STATES } from "./states.js";

const DIRECTIONS = [Direction.OUTGOING, Direction.INCOMING];

export default function CallsPage() {
  const { session } = useSession();
  const canCreate = useCan(Calls.method.createCall, { parent: session.project });
  const state = useEnumFilter("state", State, State.STATE_UNSPECIFIED, STATES);
  const direction = useEnumFilter("direction", Direction, Direction.DIRECTION_UNSPECIFIED, DIRECTIONS);
  const filter = andFilter(state.clause, direction.clause);
  const list = useInfiniteQuery(
    Calls.method.listCalls,
    { parent: session.project, pageSize: 25, pageToken: "", filter },
    { ...PAGED, refetchInterval: POLL_MS },
  );
  const rows = pagedRows(list, (p) => p.calls);
  return (
    <Page title="Calls">
      {canCreate === true && <CreateCall />}
      <div className="filters row">
        <EnumFilterSelect label="State" id="calls-state" filter={state} />
        <EnumFilterSelect label="Direction" id="calls-direction" filter={direction} />
        <p className="muted" aria-live="off">
          Refreshed every {POLL_MS / 1000} s.
        </p>
      </div>
      <ListTable
        list={list}
        errorTitle="Could not list calls"
        caption="Calls"
        rows={rows}
        rowKey={(c) => c.name}
        empty={filter === "" ? "No calls yet." : "No call matches these filters."}
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
    </Page>
  );
}

function CreateCall() {
  const { session } = useSession();
  const refresh = useRefresh(Calls);
  const [to, setTo] = useState("");
  const [from, setFrom] = useState("");
  const [handlers, setHandlers] = useState("");
  const [stateUpdateUri, setStateUpdateUri] = useState("");
  const [record, setRecord] = useState(false);
  const [transcribe, setTranscribe] = useState(false);
  const create = useMutation(Calls.method.createCall, { onSuccess: refresh });
  const submit = () =>
    create.mutate({
      parent: session.project,
      call: {
        to: to.trim(),
        from: from.trim(),
        options: {
          handlerUris: parseLines(handlers),
          stateUpdateUri: stateUpdateUri.trim(),
          ...(record
            ? {
                recording: {
                  trigger: Trigger.ANSWER,
                  ...(transcribe ? { transcribe: TranscribeOption.DEFAULT } : {}),
                },
              }
            : {}),
        },
      },
    });
  return (
    <FormCard
      label="Place a call"
      onSubmit={submit}
      submit="Place call"
      disabled={create.isPending}
      status={
        create.isSuccess && (
          <p role="status">
            Placed <a href={href("call", lastSegment(create.data.name))}>{lastSegment(create.data.name)}</a>.
          </p>
        )
      }
      error={create.error}
      errorTitle="Could not place the call"
    >
      <div className="row">
        <TextField
          label="To"
          id="call-to"
          required
          inputMode="tel"
          placeholder="+61491570157"
          value={to}
          onChange={setTo}
        />
        <TextField
          label="From (a number of the project)"
          id="call-from"
          required
          inputMode="tel"
          placeholder="+61491570110"
          value={from}
          onChange={setFrom}
        />
      </div>
      <TextField
        label="Handler URI (VoiceML)"
        id="call-handler"
        required
        type="url"
        value={handlers}
        onChange={setHandlers}
      />
      <TextField
        label="State update URI (optional)"
        id="call-state-uri"
        type="url"
        value={stateUpdateUri}
        onChange={setStateUpdateUri}
      />
      <div className="check">
        <input
          id="call-record"
          type="checkbox"
          checked={record}
          onChange={(e) => setRecord(e.target.checked)}
        />
        <label htmlFor="call-record">Record the call from its answer</label>
      </div>
      {record && (
        <div className="check">
          <input
            id="call-transcribe"
            type="checkbox"
            checked={transcribe}
            onChange={(e) => setTranscribe(e.target.checked)}
          />
          <label htmlFor="call-transcribe">Transcribe the recording</label>
        </div>
      )}
    </FormCard>
  );
}
