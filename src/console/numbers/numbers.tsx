/**
 * A project's phone numbers: its instances (filter by prefix, deleted ones
 * too), editing one's handler URIs, labels and name, releasing one; and the
 * inventory search, provisioning a number from it. Writes are offered only
 * when the credential may make them (kit/can.ts).
 */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { type FormEvent, useId, useState } from "react";
import {
  PhoneNumberInstance_LifecycleState as LifecycleState,
  type PhoneNumberInstance,
  PhoneNumberInstances,
} from "../../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import {
  PhoneNumber_PhoneNumberType as NumberType,
  PhoneNumbers,
} from "../../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { EnumSelect, TextAreaField, TextField } from "../kit/fields.js";
import { enumName, time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { formatLabels, parseLabels, parseLines } from "../kit/lists.js";
import { Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";
import { NUMBER_TYPES, PHONE_NUMBER_COLUMNS } from "./phone-numbers.js";

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
    PAGED,
  );
  const rows = pagedRows(list, (p) => p.phoneNumberInstances);
  const edited = rows.find((r) => r.name === editing);
  return (
    <section aria-labelledby="instances-title">
      <h2 id="instances-title">The project's numbers</h2>
      <div className="filters row">
        <TextField
          label="Number starts with"
          id="instances-prefix"
          invalid={prefixInvalid && "Digits, optionally after a +."}
          value={prefix}
          onChange={setPrefix}
        />
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
      <ListTable
        list={list}
        errorTitle="Could not list the project's numbers"
        caption="The project's numbers"
        rows={rows}
        rowKey={(r) => r.name}
        empty="The project has no numbers yet: search the inventory below and provision one."
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
      {edited !== undefined && (
        <EditInstance key={edited.name} instance={edited} onDone={() => setEditing(undefined)} />
      )}
    </section>
  );
}

function Release({ instance }: { instance: PhoneNumberInstance }) {
  const refresh = useRefresh(PhoneNumberInstances);
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
  const refresh = useRefresh(PhoneNumberInstances);
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
      <TextField label="Display name" id={`${id}-name`} value={displayName} onChange={setDisplayName} />
      <TextAreaField
        label="Incoming call handler URIs (one per line)"
        id={`${id}-calls`}
        rows={2}
        value={callUris}
        onChange={setCallUris}
      />
      <TextAreaField
        label="Incoming message handler URIs (one per line)"
        id={`${id}-messages`}
        rows={2}
        value={messageUris}
        onChange={setMessageUris}
      />
      <TextAreaField
        label="Labels (key=value per line)"
        id={`${id}-labels`}
        invalid={"error" in parsed && parsed.error}
        rows={2}
        value={labels}
        onChange={setLabels}
      />
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
  const refresh = useRefresh(PhoneNumberInstances);
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
    { ...PAGED, enabled: query !== undefined },
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
  const rows = pagedRows(search, (p) => p.phoneNumbers);
  return (
    <section aria-labelledby="search-title">
      <h2 id="search-title">Find a number</h2>
      <form className="filters row" onSubmit={submit} aria-label="Search the inventory">
        <TextField
          label="Country"
          id="search-country"
          maxLength={2}
          value={countryCode}
          onChange={setCountryCode}
        />
        <EnumSelect
          label="Type"
          id="search-type"
          enumType={NumberType}
          any={NumberType.PHONE_NUMBER_TYPE_UNSPECIFIED}
          options={NUMBER_TYPES}
          value={numberType}
          onChange={setNumberType}
        />
        <TextField label="Starts with" id="search-prefix" value={prefix} onChange={setPrefix} />
        <button type="submit">Search</button>
      </form>
      {canWrite && (
        <TextField
          label="Call handler URI for numbers provisioned here (optional)"
          id="provision-handler"
          type="url"
          value={handler}
          onChange={setHandler}
        />
      )}
      {query !== undefined && (
        <ListTable
          list={search}
          errorTitle="Could not search the inventory"
          notices={
            <>
              <ErrorBanner error={provision.error} title="Could not provision the number" />
              {provision.isSuccess && (
                <p role="status">
                  Provisioned <code>{provision.data.phoneNumber?.phoneNumber}</code>.
                </p>
              )}
            </>
          }
          loading="Searching…"
          caption="Numbers available"
          rows={rows}
          rowKey={(n) => n.name}
          empty="No number matches: try another type or prefix."
          columns={[
            ...PHONE_NUMBER_COLUMNS,
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
      )}
    </section>
  );
}
