/**
 * One call: its timeline (every state with its time), refreshed until it
 * ends; the call-control requests and state updates sent for it (from the
 * webhook inspector); its child calls; its recordings with an audio
 * player and a waveform, their transcriptions beside them (deleting a
 * recording, when the credential may); and for a SIP call its SIP
 * dialogue as a ladder (sip-ladder.tsx).
 */
import { useInfiniteQuery, useMutation, useQuery } from "@connectrpc/connect-query";
import { useEffect, useState } from "react";
import {
  type Call,
  Calls,
  Call_CreateMethod as CreateMethod,
  Call_Direction as Direction,
  Call_State as State,
  Call_Transport as Transport,
} from "../../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  Recording_State as RecordingState,
  Recordings,
  RecordingView,
} from "../../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import {
  type Transcription,
  Transcription_State as TranscriptionState,
  Transcriptions,
  TranscriptionView,
} from "../../../gen/enfonica/voice/v1beta1/transcriptions_pb.js";
import { WebhookDelivery_State as DeliveryState } from "../../../gen/switchboard/admin/v1/webhooks_pb.js";
import { WebhookDeliveries } from "../../../gen/switchboard/webhooks/v1/webhook_deliveries_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ConfirmButton } from "../kit/confirm-button.js";
import { EmptyState } from "../kit/empty.js";
import { ErrorBanner } from "../kit/errors.js";
import { duration, enumName, lastSegment, millis, time } from "../kit/format.js";
import { PAGED, pagedRows } from "../kit/list.js";
import { Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";
import { Table } from "../kit/table.js";
import { href } from "../router.js";
import { SipDialogue } from "./sip-ladder.js";
import { isFinal, POLL_MS } from "./states.js";
import { Waveform } from "./waveform.js";

/** A link the API gave, on the console's own origin (the server that serves both). */
function sameOrigin(uri: string): string {
  try {
    const u = new URL(uri, window.location.origin);
    return `${u.pathname}${u.search}`;
  } catch {
    return uri;
  }
}

export default function CallPage({ id }: { id: string }) {
  const { session } = useSession();
  const name = `${session.project}/calls/${id}`;
  const call = useQuery(
    Calls.method.getCall,
    { name },
    { refetchInterval: (q) => (q.state.data !== undefined && isFinal(q.state.data.state) ? false : POLL_MS) },
  );
  const ended = call.data !== undefined && isFinal(call.data.state);
  return (
    <Page title={`Call ${id}`}>
      <p>
        <a href={href("calls")}>← All calls</a>
      </p>
      <ErrorBanner error={call.error} title="Could not get the call" />
      {call.data !== undefined && (
        <>
          <Summary call={call.data} />
          <Timeline call={call.data} />
          {call.data.transport === Transport.SIP && <SipDialogue call={name} live={!ended} />}
          <Recordings_ name={name} live={!ended} />
          <ControlRequests name={name} live={!ended} />
          <ChildCalls name={name} live={!ended} />
        </>
      )}
    </Page>
  );
}

function Summary({ call }: { call: Call }) {
  return (
    <dl className="summary">
      <dt>State</dt>
      <dd>
        <span className="state" data-testid="call-state" data-state={enumName(State, call.state)}>
          {enumName(State, call.state)}
        </span>
      </dd>
      <dt>Transport</dt>
      <dd>{enumName(Transport, call.transport)}</dd>
      <dt>Direction</dt>
      <dd>{enumName(Direction, call.direction)}</dd>
      <dt>From</dt>
      <dd>{call.from}</dd>
      <dt>To</dt>
      <dd>{call.to}</dd>
      <dt>Created by</dt>
      <dd>{enumName(CreateMethod, call.createMethod)}</dd>
      {call.originatingCall !== "" && (
        <>
          <dt>Parent call</dt>
          <dd>
            <a href={href("call", lastSegment(call.originatingCall))}>{lastSegment(call.originatingCall)}</a>
          </dd>
        </>
      )}
      {call.errorCode !== "" && (
        <>
          <dt>Error</dt>
          <dd>
            <code>{call.errorCode}</code> {call.errorMessage}
          </dd>
        </>
      )}
      <dt>Answered for</dt>
      <dd>{duration(call.answerDuration)}</dd>
    </dl>
  );
}

function Timeline({ call }: { call: Call }) {
  const steps: { label: string; at: typeof call.createTime }[] = [
    { label: "QUEUED", at: call.createTime },
    { label: "STARTING", at: call.startTime },
    { label: "RINGING", at: call.ringTime },
    { label: "IN_PROGRESS", at: call.answerTime },
    { label: isFinal(call.state) ? enumName(State, call.state) : "END", at: call.endTime },
  ];
  const start = millis(call.createTime) ?? 0;
  return (
    <section aria-labelledby="timeline-title">
      <h2 id="timeline-title">Timeline</h2>
      <ol className="timeline">
        {steps
          .filter((s) => s.at !== undefined)
          .map((s) => (
            <li key={s.label}>
              <strong>{s.label}</strong> <time>{time(s.at)}</time>{" "}
              <span className="muted">+{(((millis(s.at) ?? start) - start) / 1000).toFixed(1)} s</span>
            </li>
          ))}
      </ol>
    </section>
  );
}

/**
 * The call's recordings, each with its player and waveform and, beside
 * them, its transcriptions (refreshed while the call or a recording or
 * transcription is still pending).
 */
function Recordings_({ name, live }: { name: string; live: boolean }) {
  const list = useQuery(
    Recordings.method.listRecordings,
    { parent: name, pageSize: 50, view: RecordingView.FULL },
    {
      refetchInterval: (q) =>
        live || q.state.data?.recordings.some((r) => r.state === RecordingState.PENDING) === true
          ? POLL_MS
          : false,
    },
  );
  const transcripts = useQuery(
    Transcriptions.method.listTranscriptions,
    { parent: name, pageSize: 50, view: TranscriptionView.FULL },
    {
      refetchInterval: (q) =>
        live ||
        list.data?.recordings.some((r) => r.state === RecordingState.PENDING) === true ||
        q.state.data?.transcriptions.some((t) => t.state === TranscriptionState.PENDING) === true
          ? POLL_MS
          : false,
    },
  );
  // The probe names no recording (an empty id fails validation after authorization).
  const canDelete = useCan(Recordings.method.deleteRecording, { name: `${name}/recordings/` });
  const refresh = useRefresh(Recordings);
  const remove = useMutation(Recordings.method.deleteRecording, { onSuccess: refresh });
  const rows = list.data?.recordings ?? [];
  const texts = transcripts.data?.transcriptions ?? [];
  // A recording's transcription is written in the transaction that ends the
  // recording: read them again whenever a recording's state changes.
  const states = rows.map((r) => r.state).join();
  const refetchTranscripts = transcripts.refetch;
  useEffect(() => {
    if (states !== "") void refetchTranscripts();
  }, [states, refetchTranscripts]);
  return (
    <section aria-labelledby="recordings-title">
      <h2 id="recordings-title">Recordings</h2>
      <ErrorBanner error={list.error} title="Could not list recordings" />
      <ErrorBanner error={transcripts.error} title="Could not list transcriptions" />
      <ErrorBanner error={remove.error} title="Could not delete the recording" />
      {rows.length === 0 ? (
        <EmptyState title="No recordings">
          A call records when asked to (Record, RecordCall, or the recording option).
        </EmptyState>
      ) : (
        <ul className="recordings">
          {rows.map((r) => (
            <li key={r.name} className="recording">
              <div>
                <p>
                  <code>{lastSegment(r.name)}</code> · {enumName(RecordingState, r.state)} ·{" "}
                  {duration(r.duration)}
                </p>
                {r.audio[0] !== undefined && r.audio[0].uri !== "" && (
                  <Player uri={r.audio[0].uri} name={r.name} />
                )}
                {canDelete === true && r.state !== RecordingState.PENDING && (
                  <ConfirmButton
                    label="Delete"
                    target={`recording ${lastSegment(r.name)}`}
                    pending={remove.isPending}
                    onConfirm={() => remove.mutate({ name: r.name })}
                  />
                )}
              </div>
              <Transcript recording={r.name} transcriptions={texts.filter((t) => t.recording === r.name)} />
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** A recording's transcriptions, beside its player. */
function Transcript({ recording, transcriptions }: { recording: string; transcriptions: Transcription[] }) {
  return (
    <section className="transcript" aria-label={`Transcription of recording ${lastSegment(recording)}`}>
      <h3>Transcription</h3>
      {transcriptions.length === 0 ? (
        <p className="muted">Not transcribed (ask for it with the recording's transcribe option).</p>
      ) : (
        transcriptions.map((t) => (
          <div key={t.name}>
            <p className="muted">
              <code>{lastSegment(t.name)}</code> · {enumName(TranscriptionState, t.state)}
            </p>
            {t.utterances.length === 0 && t.state !== TranscriptionState.PENDING ? (
              <p className="muted">No speech recognised.</p>
            ) : (
              <ul>
                {t.utterances.map((u, i) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: utterances have no id and never reorder
                  <li key={i}>
                    <span className="muted">{duration(u.offset)}</span> {u.text}
                  </li>
                ))}
              </ul>
            )}
          </div>
        ))
      )}
    </section>
  );
}

/**
 * A recording's audio player and waveform. The link is kept as first seen:
 * a refetch signs a new one, which must not restart the player.
 */
function Player({ uri, name }: { uri: string; name: string }) {
  const [src] = useState(() => sameOrigin(uri));
  return (
    <>
      {/* biome-ignore lint/a11y/useMediaCaption: call audio has no captions; its transcription is shown beside it */}
      <audio controls preload="metadata" src={src} aria-label={`Recording ${lastSegment(name)}`} />
      <Waveform src={src} label={`Waveform of recording ${lastSegment(name)}`} />
    </>
  );
}

function ControlRequests({ name, live }: { name: string; live: boolean }) {
  const { session } = useSession();
  const list = useInfiniteQuery(
    WebhookDeliveries.method.listWebhookDeliveries,
    { parent: session.project, pageSize: 50, pageToken: "", filter: `call = "${name}"` },
    { ...PAGED, refetchInterval: live ? POLL_MS : false },
  );
  const rows = pagedRows(list, (p) => p.webhookDeliveries);
  return (
    <section aria-labelledby="control-title">
      <h2 id="control-title">Requests sent for this call</h2>
      <ErrorBanner error={list.error} title="Could not list the call's webhooks" />
      <Table
        caption="Requests sent for this call"
        rows={rows}
        rowKey={(d) => d.name}
        empty="No requests sent for this call yet."
        hasMore={list.hasNextPage}
        loadingMore={list.isFetchingNextPage}
        onLoadMore={() => void list.fetchNextPage()}
        columns={[
          { header: "Event", cell: (d) => <a href={href("webhooks", lastSegment(d.name))}>{d.eventType}</a> },
          { header: "State", cell: (d) => enumName(DeliveryState, d.state) },
          { header: "To", cell: (d) => d.uris.join(" ") },
          {
            header: "Answer",
            cell: (d) => {
              const last = d.attempts.at(-1);
              return last === undefined ? "—" : <pre className="clip">{last.responseBody || last.error}</pre>;
            },
          },
          { header: "Created", cell: (d) => time(d.createTime) },
        ]}
      />
    </section>
  );
}

function ChildCalls({ name, live }: { name: string; live: boolean }) {
  const { session } = useSession();
  const list = useQuery(
    Calls.method.listCalls,
    { parent: session.project, pageSize: 100, filter: "create_method = PARENT_CALL" },
    { refetchInterval: live ? POLL_MS : false },
  );
  const rows = (list.data?.calls ?? []).filter((c) => c.originatingCall === name);
  if (rows.length === 0 && list.error === null) return null;
  return (
    <section aria-labelledby="children-title">
      <h2 id="children-title">Child calls</h2>
      <ErrorBanner error={list.error} title="Could not list child calls" />
      <Table
        caption="Child calls"
        rows={rows}
        rowKey={(c) => c.name}
        empty="No child calls."
        columns={[
          {
            header: "Call",
            cell: (c) => <a href={href("call", lastSegment(c.name))}>{lastSegment(c.name)}</a>,
          },
          { header: "State", cell: (c) => enumName(State, c.state) },
          { header: "To", cell: (c) => c.to },
          { header: "Created", cell: (c) => time(c.createTime) },
        ]}
      />
    </section>
  );
}
