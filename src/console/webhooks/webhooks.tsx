/**
 * The webhook inspector: a project's deliveries filtered by event, state,
 * host and call; a delivery's request, attempts and responses; redelivery;
 * and the project's signing key (signing-key.tsx).
 */
import { useInfiniteQuery, useMutation, useQuery } from "@connectrpc/connect-query";
import { useState } from "react";
import { WebhookDelivery_State as DeliveryState } from "../../../gen/switchboard/admin/v1/webhooks_pb.js";
import { WebhookDeliveries } from "../../../gen/switchboard/webhooks/v1/webhook_deliveries_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { andFilter, EnumFilterSelect, SelectField, TextField, useEnumFilter } from "../kit/fields.js";
import { duration, enumName, lastSegment, time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";
import { Table } from "../kit/table.js";
import { href, useRoute } from "../router.js";
import { SigningKey } from "./signing-key.js";

const EVENTS = ["CALL", "CALL_STATE_UPDATE", "RECORDING_READY", "INCOMING_MESSAGE", "MESSAGE_STATUS_UPDATE"];
const STATES = [DeliveryState.PENDING, DeliveryState.DELIVERED, DeliveryState.FAILED];
const HOST = /^[A-Za-z0-9.:[\]-]*$/;

export default function WebhooksPage() {
  const route = useRoute();
  const id = route[1];
  return id === undefined ? <Deliveries /> : <Delivery id={id} />;
}

function Deliveries() {
  const { session } = useSession();
  const [event, setEvent] = useState("");
  const state = useEnumFilter("state", DeliveryState, DeliveryState.STATE_UNSPECIFIED, STATES);
  const [host, setHost] = useState("");
  const hostInvalid = !HOST.test(host);
  const filter = andFilter(
    event === "" ? "" : `event = ${event}`,
    state.clause,
    host === "" || hostInvalid ? "" : `host = "${host}"`,
  );
  const list = useInfiniteQuery(
    WebhookDeliveries.method.listWebhookDeliveries,
    { parent: session.project, pageSize: 25, pageToken: "", filter },
    { ...PAGED, refetchInterval: 2000 },
  );
  const rows = pagedRows(list, (p) => p.webhookDeliveries);
  return (
    <Page title="Webhooks">
      <div className="filters row">
        <SelectField
          label="Event"
          id="webhooks-event"
          any=""
          options={EVENTS}
          value={event}
          onChange={setEvent}
        />
        <EnumFilterSelect label="State" id="webhooks-state" filter={state} />
        <TextField
          label="Host"
          id="webhooks-host"
          invalid={hostInvalid && "A host name or address."}
          value={host}
          onChange={setHost}
        />
      </div>
      <ListTable
        list={list}
        errorTitle="Could not list webhook deliveries"
        caption="Webhook deliveries"
        rows={rows}
        rowKey={(d) => d.name}
        empty={filter === "" ? "No webhooks sent yet." : "No delivery matches these filters."}
        columns={[
          {
            header: "Delivery",
            cell: (d) => <a href={href("webhooks", lastSegment(d.name))}>{lastSegment(d.name)}</a>,
          },
          { header: "Event", cell: (d) => d.eventType },
          { header: "State", cell: (d) => enumName(DeliveryState, d.state) },
          { header: "Attempts", cell: (d) => String(d.attempts.length) },
          { header: "To", cell: (d) => d.uris.join(" ") },
          {
            header: "Call",
            cell: (d) =>
              d.call === "" ? "" : <a href={href("call", lastSegment(d.call))}>{lastSegment(d.call)}</a>,
          },
          { header: "Created", cell: (d) => time(d.createTime) },
        ]}
      />
      <SigningKey />
    </Page>
  );
}

function pretty(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

function Delivery({ id }: { id: string }) {
  const { session } = useSession();
  const refresh = useRefresh(WebhookDeliveries);
  const name = `${session.project}/webhookDeliveries/${id}`;
  const canRedeliver = useCan(WebhookDeliveries.method.redeliverWebhookDelivery, {
    name: `${session.project}/webhookDeliveries/0`,
  });
  const delivery = useQuery(WebhookDeliveries.method.getWebhookDelivery, { name }, { refetchInterval: 2000 });
  const redeliver = useMutation(WebhookDeliveries.method.redeliverWebhookDelivery, { onSuccess: refresh });
  const d = delivery.data;
  return (
    <Page title={`Webhook ${id}`}>
      <p>
        <a href={href("webhooks")}>← All webhooks</a>
      </p>
      <ErrorBanner error={delivery.error} title="Could not get the delivery" />
      {d !== undefined && (
        <>
          <dl className="summary">
            <dt>Event</dt>
            <dd>{d.eventType}</dd>
            <dt>State</dt>
            <dd data-testid="delivery-state">{enumName(DeliveryState, d.state)}</dd>
            <dt>To</dt>
            <dd>{d.uris.join(" ")}</dd>
            <dt>Created</dt>
            <dd>{time(d.createTime)}</dd>
            <dt>Next attempt</dt>
            <dd>{time(d.nextAttemptTime)}</dd>
          </dl>
          {canRedeliver === true && d.state === DeliveryState.FAILED && (
            <p>
              <button
                type="button"
                className="primary"
                onClick={() => redeliver.mutate({ name })}
                disabled={redeliver.isPending}
              >
                Redeliver
              </button>
            </p>
          )}
          {canRedeliver === true && d.state !== DeliveryState.FAILED && (
            <p className="muted">Only a FAILED delivery can be redelivered.</p>
          )}
          {redeliver.isSuccess && (
            <p role="status">
              Redelivery queued:{" "}
              <a href={href("webhooks", lastSegment(redeliver.data.name))}>
                {lastSegment(redeliver.data.name)}
              </a>
              .
            </p>
          )}
          <ErrorBanner error={redeliver.error} title="Could not redeliver" />
          <h2>Request body</h2>
          <pre className="body">{pretty(d.body)}</pre>
          <h2>Attempts</h2>
          <Table
            caption="Attempts"
            rows={d.attempts.map((a, i) => ({ a, i }))}
            rowKey={(r) => String(r.i)}
            empty="Not attempted yet."
            columns={[
              { header: "#", cell: (r) => String(r.i + 1) },
              { header: "URI", cell: (r) => r.a.uri },
              { header: "Status", cell: (r) => (r.a.statusCode === 0 ? "—" : String(r.a.statusCode)) },
              { header: "Error", cell: (r) => r.a.error },
              { header: "Started", cell: (r) => time(r.a.startTime) },
              { header: "Took", cell: (r) => duration(r.a.duration) },
              {
                header: "Response",
                cell: (r) => (
                  <pre className="clip">
                    {r.a.responseBody}
                    {r.a.responseTruncated ? "…" : ""}
                  </pre>
                ),
              },
            ]}
          />
        </>
      )}
    </Page>
  );
}
