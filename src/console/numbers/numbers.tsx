/**
 * A project's phone numbers: its instances (filter by prefix, deleted ones
 * too), editing one's handler URIs, labels and name, releasing one; and the
 * inventory search, provisioning a number from it. Writes are offered only
 * when the credential may make them (kit/can.ts).
 */
import { createConnectQueryKey, useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useId, useState } from "react";
import {
  PhoneNumberInstance_LifecycleState as LifecycleState,
  type PhoneNumberInstance,
  PhoneNumberInstances,
} from "../../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import {
  PhoneNumber_PhoneNumberCapability as Capability,
  PhoneNumber_PhoneNumberType as NumberType,
  PhoneNumbers,
} from "../../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { enumName, time } from "../kit/format.js";
import { formatLabels, parseLabels, parseLines } from "../kit/lists.js";
import { Field, Page } from "../kit/page.js";
import { Table } from "../kit/table.js";

const TYPES = [
  NumberType.LOCAL,
  NumberType.NATIONAL,
  NumberType.MOBILE,
  NumberType.TOLL_FREE,
  NumberType.SHARED_RATE,
];
const PREFIX = /^\+?[0-9]{0,15}$/;

export default function NumbersPage() {
  const { session } = useSession();
  const canWrite = useCan(PhoneNumberInstances.method.createPhoneNumberInstance, { parent: session.project });
  return (
    <Page title="Numbers">
      <Instances canWrite={canWrite === true} />
      <Search canWrite={canWrite === true} />
    </Page>
  );
}

function useRefreshInstances() {
  const queryClient = useQueryClient();
  return () =>
    queryClient.invalidateQueries({
      queryKey: createConnectQueryKey({ schema: PhoneNumberInstances, cardinality: undefined }),
    });
}

function Instances({ canWrite }: { canWrite: boolean }) {
  const { session } = useSession();
  const [prefix, setPrefix] = useState("");
  const [includeDeleted, setIncludeDeleted] = useState(false);
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const prefixInvalid = !PREFIX.test(prefix);
  const list = useInfiniteQuery(
    PhoneNumberInstances.method.listPhoneNumberInstances,
    {
      parent: session.project,
      pageSize: 50,
      pageToken: "",
      prefix: prefixInvalid ? "" : prefix,
      includeDeleted,
    },
    { pageParamKey: "pageToken", getNextPageParam: (l) => l.nextPageToken || undefined },
  );
  const rows = list.data?.pages.flatMap((p) => p.phoneNumberInstances) ?? [];
  const edited = rows.find((r) => r.name === editing);
  return (
    <section aria-labelledby="instances-title">
      <h2 id="instances-title">The project's numbers</h2>
      <div className="filters row">
        <Field
          label="Number starts with"
          id="instances-prefix"
          hint={prefixInvalid ? "Digits, optionally after a +." : undefined}
        >
          <input
            id="instances-prefix"
            value={prefix}
            aria-invalid={prefixInvalid}
            onChange={(e) => setPrefix(e.target.value)}
          />
        </Field>
        <div className="check">
          <input
            id="instances-deleted"
            type="checkbox"
            checked={includeDeleted}
            onChange={(e) => setIncludeDeleted(e.target.checked)}
          />
          <label htmlFor="instances-deleted">Include released numbers</label>
        </div>
      </div>
      <ErrorBanner error={list.error} title="Could not list the project's numbers" />
      {list.isPending ? (
        <p role="status">Loading…</p>
      ) : (
        <Table
          caption="The project's numbers"
          rows={rows}
          rowKey={(r) => r.name}
          empty="The project has no numbers yet: search the inventory below and provision one."
          hasMore={list.hasNextPage}
          loadingMore={list.isFetchingNextPage}
          onLoadMore={() => void list.fetchNextPage()}
          columns={[
            { header: "Number", cell: (r) => <code>{r.phoneNumber?.phoneNumber}</code> },
            { header: "Name", cell: (r) => r.displayName },
            { header: "State", cell: (r) => enumName(LifecycleState, r.lifecycleState) },
            { header: "Call handlers", cell: (r) => r.incomingCallHandlerUris.join(" ") },
            { header: "Message handlers", cell: (r) => r.incomingMessageHandlerUris.join(" ") },
            { header: "Labels", cell: (r) => formatLabels(r.labels) },
            {
              header: "Range",
              cell: (r) =>
                r.range === undefined ? "" : `${r.range.startPhoneNumber} – ${r.range.endPhoneNumber}`,
            },
            { header: "Created", cell: (r) => time(r.createTime) },
            {
              header: "Actions",
              cell: (r) =>
                canWrite && r.lifecycleState !== LifecycleState.DELETED ? (
                  <span className="actions">
                    <button
                      type="button"
                      onClick={() => setEditing(r.name)}
                      aria-label={`Edit ${r.phoneNumber?.phoneNumber}`}
                    >
                      Edit
                    </button>
                    <Release instance={r} />
                  </span>
                ) : null,
            },
          ]}
        />
      )}
      {edited !== undefined && (
        <EditInstance key={edited.name} instance={edited} onDone={() => setEditing(undefined)} />
      )}
    </section>
  );
}

function Release({ instance }: { instance: PhoneNumberInstance }) {
  const refresh = useRefreshInstances();
  const [confirming, setConfirming] = useState(false);
  const release = useMutation(PhoneNumberInstances.method.deletePhoneNumberInstance, { onSuccess: refresh });
  const number = instance.phoneNumber?.phoneNumber ?? "";
  if (release.error) return <ErrorBanner error={release.error} title={`Could not release ${number}`} />;
  return confirming ? (
    <button
      type="button"
      className="danger"
      onClick={() => release.mutate({ name: instance.name })}
      disabled={release.isPending}
    >
      Confirm release of {number}
    </button>
  ) : (
    <button type="button" onClick={() => setConfirming(true)} aria-label={`Release ${number}`}>
      Release
    </button>
  );
}

function EditInstance({ instance, onDone }: { instance: PhoneNumberInstance; onDone: () => void }) {
  const id = useId();
  const refresh = useRefreshInstances();
  const [displayName, setDisplayName] = useState(instance.displayName);
  const [callUris, setCallUris] = useState(instance.incomingCallHandlerUris.join("\n"));
  const [messageUris, setMessageUris] = useState(instance.incomingMessageHandlerUris.join("\n"));
  const [labels, setLabels] = useState(formatLabels(instance.labels));
  const parsed = parseLabels(labels);
  const update = useMutation(PhoneNumberInstances.method.updatePhoneNumberInstance, {
    onSuccess: async () => {
      await refresh();
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if ("error" in parsed) return;
    update.mutate({
      name: instance.name,
      phoneNumberInstance: {
        displayName,
        incomingCallHandlerUris: parseLines(callUris),
        incomingMessageHandlerUris: parseLines(messageUris),
        labels: parsed.labels,
      },
      updateMask: {
        paths: ["display_name", "incoming_call_handler_uris", "incoming_message_handler_uris", "labels"],
      },
    });
  };
  return (
    <form className="card" onSubmit={submit} aria-label={`Edit ${instance.phoneNumber?.phoneNumber}`}>
      <h3>Edit {instance.phoneNumber?.phoneNumber}</h3>
      <Field label="Display name" id={`${id}-name`}>
        <input id={`${id}-name`} value={displayName} onChange={(e) => setDisplayName(e.target.value)} />
      </Field>
      <Field label="Incoming call handler URIs (one per line)" id={`${id}-calls`}>
        <textarea
          id={`${id}-calls`}
          rows={2}
          value={callUris}
          onChange={(e) => setCallUris(e.target.value)}
        />
      </Field>
      <Field label="Incoming message handler URIs (one per line)" id={`${id}-messages`}>
        <textarea
          id={`${id}-messages`}
          rows={2}
          value={messageUris}
          onChange={(e) => setMessageUris(e.target.value)}
        />
      </Field>
      <Field
        label="Labels (key=value per line)"
        id={`${id}-labels`}
        hint={"error" in parsed ? parsed.error : undefined}
      >
        <textarea
          id={`${id}-labels`}
          rows={2}
          value={labels}
          aria-invalid={"error" in parsed}
          onChange={(e) => setLabels(e.target.value)}
        />
      </Field>
      <div className="actions">
        <button type="submit" className="primary" disabled={update.isPending || "error" in parsed}>
          Save
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
      <ErrorBanner error={update.error} title="Could not save" />
    </form>
  );
}

function Search({ canWrite }: { canWrite: boolean }) {
  const { session } = useSession();
  const refresh = useRefreshInstances();
  const [countryCode, setCountryCode] = useState("AU");
  const [numberType, setNumberType] = useState<NumberType>(NumberType.PHONE_NUMBER_TYPE_UNSPECIFIED);
  const [prefix, setPrefix] = useState("");
  const [handler, setHandler] = useState("");
  const [query, setQuery] = useState<
    { countryCode: string; numberType: NumberType; prefix: string } | undefined
  >(undefined);
  const search = useInfiniteQuery(
    PhoneNumbers.method.searchPhoneNumbers,
    { ...(query ?? { countryCode: "AU", numberType: 0, prefix: "" }), pageSize: 20, pageToken: "" },
    {
      pageParamKey: "pageToken",
      getNextPageParam: (l) => l.nextPageToken || undefined,
      enabled: query !== undefined,
    },
  );
  const provision = useMutation(PhoneNumberInstances.method.createPhoneNumberInstance, {
    onSuccess: async () => {
      await refresh();
      await search.refetch();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setQuery({ countryCode: countryCode.trim().toUpperCase(), numberType, prefix: prefix.trim() });
  };
  const rows = search.data?.pages.flatMap((p) => p.phoneNumbers) ?? [];
  return (
    <section aria-labelledby="search-title">
      <h2 id="search-title">Find a number</h2>
      <form className="filters row" onSubmit={submit} aria-label="Search the inventory">
        <Field label="Country" id="search-country">
          <input
            id="search-country"
            maxLength={2}
            value={countryCode}
            onChange={(e) => setCountryCode(e.target.value)}
          />
        </Field>
        <Field label="Type" id="search-type">
          <select
            id="search-type"
            value={numberType}
            onChange={(e) => setNumberType(Number(e.target.value) as NumberType)}
          >
            <option value={NumberType.PHONE_NUMBER_TYPE_UNSPECIFIED}>Any</option>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {enumName(NumberType, t)}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Starts with" id="search-prefix">
          <input id="search-prefix" value={prefix} onChange={(e) => setPrefix(e.target.value)} />
        </Field>
        <button type="submit">Search</button>
      </form>
      {canWrite && (
        <Field label="Call handler URI for numbers provisioned here (optional)" id="provision-handler">
          <input
            id="provision-handler"
            type="url"
            value={handler}
            onChange={(e) => setHandler(e.target.value)}
          />
        </Field>
      )}
      <ErrorBanner error={search.error} title="Could not search the inventory" />
      <ErrorBanner error={provision.error} title="Could not provision the number" />
      {provision.isSuccess && (
        <p role="status">
          Provisioned <code>{provision.data.phoneNumber?.phoneNumber}</code>.
        </p>
      )}
      {query !== undefined &&
        (search.isPending ? (
          <p role="status">Searching…</p>
        ) : (
          <Table
            caption="Numbers available"
            rows={rows}
            rowKey={(n) => n.name}
            empty="No number matches: try another type or prefix."
            hasMore={search.hasNextPage}
            loadingMore={search.isFetchingNextPage}
            onLoadMore={() => void search.fetchNextPage()}
            columns={[
              { header: "Number", cell: (n) => <code>{n.phoneNumber}</code> },
              { header: "Type", cell: (n) => enumName(NumberType, n.numberType) },
              {
                header: "Capabilities",
                cell: (n) => n.capabilities.map((c) => enumName(Capability, c)).join(", "),
              },
              {
                header: "Actions",
                cell: (n) =>
                  canWrite ? (
                    <button
                      type="button"
                      disabled={provision.isPending}
                      aria-label={`Provision ${n.phoneNumber}`}
                      onClick={() =>
                        provision.mutate({
                          parent: session.project,
                          phoneNumberInstance: {
                            phoneNumber: { phoneNumber: n.phoneNumber },
                            incomingCallHandlerUris: parseLines(handler),
                          },
                        })
                      }
                    >
                      Provision
                    </button>
                  ) : null,
              },
            ]}
          />
        ))}
    </section>
  );
}
