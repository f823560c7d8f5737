/**
 * A project's messages: the list filtered by status and direction (polled),
 * sending one (its encoding and segment count shown before it is sent, by
 * the same rules as the service: src/messaging/messages/encoding.ts), a
 * message's status history; and the project's unsubscribers.
 */
import { useInfiniteQuery, useMutation, useQuery } from "@connectrpc/connect-query";
import { useState } from "react";
import {
  Message_Direction as Direction,
  Messages,
  Message_Status as Status,
} from "../../../gen/enfonica/messaging/v1/messages_pb.js";
import { encodingOf } from "../../messaging/messages/encoding.js";
import { smartEncode } from "../../messaging/messages/smart-encoding.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { andFilter, EnumFilterSelect, TextAreaField, TextField, useEnumFilter } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { enumName, lastSegment, time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";
import { href, useRoute } from "../router.js";
import { Unsubscribers } from "./unsubscribers.js";

const STATUSES = [
  Status.QUEUED,
  Status.SENDING,
  Status.SENT,
  Status.FAILED,
  Status.DELIVERED,
  Status.UNDELIVERED,
  Status.RECEIVED,
];
const DIRECTIONS = [Direction.OUTGOING, Direction.INCOMING];
const FINAL = new Set([Status.FAILED, Status.DELIVERED, Status.UNDELIVERED, Status.RECEIVED]);

export default function MessagesPage() {
  const route = useRoute();
  const id = route[1];
  return id === undefined ? <List /> : <MessagePage id={id} />;
}

function List() {
  const { session } = useSession();
  const canSend = useCan(Messages.method.createMessage, { parent: session.project });
  const status = useEnumFilter("status", Status, Status.STATUS_UNSPECIFIED, STATUSES);
  const direction = useEnumFilter("direction", Direction, Direction.DIRECTION_UNSPECIFIED, DIRECTIONS);
  const filter = andFilter(status.clause, direction.clause);
  const list = useInfiniteQuery(
    Messages.method.listMessages,
    { parent: session.project, pageSize: 25, pageToken: "", filter },
    { ...PAGED, refetchInterval: 2000 },
  );
  const rows = pagedRows(list, (p) => p.messages);
  return (
    <Page title="Messages">
      {canSend === true && <Send />}
      <div className="filters row">
        <EnumFilterSelect label="Status" id="messages-status" filter={status} />
        <EnumFilterSelect label="Direction" id="messages-direction" filter={direction} />
      </div>
      <ListTable
        list={list}
        errorTitle="Could not list messages"
        caption="Messages"
        rows={rows}
        rowKey={(m) => m.name}
        empty={filter === "" ? "No messages yet." : "No message matches these filters."}
        columns={[
          {
            header: "Message",
            cell: (m) => <a href={href("messages", lastSegment(m.name))}>{lastSegment(m.name)}</a>,
          },
          { header: "Status", cell: (m) => enumName(Status, m.status) },
          { header: "Direction", cell: (m) => enumName(Direction, m.direction) },
          { header: "From", cell: (m) => m.from },
          { header: "To", cell: (m) => m.to },
          { header: "Body", cell: (m) => m.body },
          { header: "Created", cell: (m) => time(m.createTime) },
        ]}
      />
      <Unsubscribers />
    </Page>
  );
}

function Send() {
  const { session } = useSession();
  const refresh = useRefresh(Messages);
  const [to, setTo] = useState("");
  const [from, setFrom] = useState("");
  const [body, setBody] = useState("");
  const [smart, setSmart] = useState(false);
  const facts = encodingOf(smart ? smartEncode(body) : body);
  const send = useMutation(Messages.method.createMessage, { onSuccess: refresh });
  const submit = () =>
    send.mutate({
      parent: session.project,
      message: { to: to.trim(), from: from.trim(), body, smartEncoding: smart },
    });
  return (
    <FormCard
      label="Send a message"
      onSubmit={submit}
      submit="Send"
      disabled={send.isPending}
      status={
        send.isSuccess && (
          <p role="status">
            Sent <a href={href("messages", lastSegment(send.data.name))}>{lastSegment(send.data.name)}</a>.
          </p>
        )
      }
      error={send.error}
      errorTitle="Could not send the message"
    >
      <div className="row">
        <TextField label="To" id="message-to" required inputMode="tel" value={to} onChange={setTo} />
        <TextField
          label="From (a number of the project)"
          id="message-from"
          required
          inputMode="tel"
          value={from}
          onChange={setFrom}
        />
      </div>
      <TextAreaField
        label="Body"
        id="message-body"
        hint={
          <span data-testid="message-encoding">
            {facts.encoding} · {facts.segmentCount} {facts.segmentCount === 1 ? "segment" : "segments"}
          </span>
        }
        rows={3}
        value={body}
        aria-describedby="message-body-hint"
        onChange={setBody}
      />
      <div className="check">
        <input
          id="message-smart"
          type="checkbox"
          checked={smart}
          onChange={(e) => setSmart(e.target.checked)}
        />
        <label htmlFor="message-smart">Smart encoding (replace look-alike characters to stay in GSM-7)</label>
      </div>
    </FormCard>
  );
}

function MessagePage({ id }: { id: string }) {
  const { session } = useSession();
  const message = useQuery(
    Messages.method.getMessage,
    { name: `${session.project}/messages/${id}` },
    { refetchInterval: (q) => (q.state.data !== undefined && FINAL.has(q.state.data.status) ? false : 1000) },
  );
  const m = message.data;
  return (
    <Page title={`Message ${id}`}>
      <p>
        <a href={href("messages")}>← All messages</a>
      </p>
      <ErrorBanner error={message.error} title="Could not get the message" />
      {m !== undefined && (
        <>
          <dl className="summary">
            <dt>Status</dt>
            <dd data-testid="message-status">{enumName(Status, m.status)}</dd>
            <dt>Direction</dt>
            <dd>{enumName(Direction, m.direction)}</dd>
            <dt>From</dt>
            <dd>{m.from}</dd>
            <dt>To</dt>
            <dd>{m.to}</dd>
            <dt>Body</dt>
            <dd>{m.body}</dd>
            {m.errorCode !== "" && (
              <>
                <dt>Error</dt>
                <dd>
                  <code>{m.errorCode}</code> {m.errorMessage}
                </dd>
              </>
            )}
          </dl>
          <h2>Status history</h2>
          <ol className="timeline">
            <li>
              <strong>{m.direction === Direction.INCOMING ? "RECEIVED" : "QUEUED"}</strong>{" "}
              {time(m.createTime)}
            </li>
            {m.sendTime !== undefined && (
              <li>
                <strong>SENT</strong> {time(m.sendTime)}
              </li>
            )}
            {m.deliverTime !== undefined && (
              <li>
                <strong>{enumName(Status, m.status)}</strong> {time(m.deliverTime)}
              </li>
            )}
          </ol>
        </>
      )}
    </Page>
  );
}
