/**
 * A project's SIP domains: the list (deleted ones too), creating one (of
 * either type) and editing one — its termination mode, handler URIs,
 * REGISTER and CIDR blocks, the blocks checked as they are typed — and
 * deleting one. A domain's own page (sip-domain.tsx) has its users and
 * verification.
 */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { type FormEvent, useId, useState } from "react";
import {
  SipDomain_DomainType as DomainType,
  SipDomain_TerminationMode as Mode,
  type SipDomain,
  SipDomains,
} from "../../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { EnumSelect, TextAreaField, TextField } from "../kit/fields.js";
import { enumName, lastSegment, time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { parseLines } from "../kit/lists.js";
import { Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";
import { href } from "../router.js";
import { parseCidrLines } from "./cidr.js";

const MODES = [Mode.TERMINATION_MODE_DISABLED, Mode.PSTN_TRUNK, Mode.PROGRAMMABLE];
const DOMAIN_ID = /^[a-z0-9][a-z0-9-]{0,28}[a-z0-9]$/;
const TYPES = [DomainType.STANDARD, DomainType.COLLAB_DIRECT_ROUTING];

/** Whether users may change the domain's CIDR blocks (not for domain-optional or collaboration domains). */
function blocksEditable(domain: SipDomain | undefined): boolean {
  return domain === undefined || (!domain.domainOptional && domain.type !== DomainType.COLLAB_DIRECT_ROUTING);
}

export default function SipDomainsPage() {
  const { session } = useSession();
  const canWrite = useCan(SipDomains.method.createSipDomain, { parent: session.project });
  const refresh = useRefresh(SipDomains);
  const [showDeleted, setShowDeleted] = useState(false);
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const [confirming, setConfirming] = useState<string | undefined>(undefined);
  const list = useInfiniteQuery(
    SipDomains.method.listSipDomains,
    { parent: session.project, pageSize: 50, pageToken: "", showDeleted },
    PAGED,
  );
  const remove = useMutation(SipDomains.method.deleteSipDomain, { onSuccess: refresh });
  const rows = pagedRows(list, (p) => p.sipDomains);
  const edited = rows.find((d) => d.name === editing);
  return (
    <Page title="SIP domains">
      {canWrite === true && <DomainForm key="new" />}
      <div className="check">
        <input
          id="domains-deleted"
          type="checkbox"
          checked={showDeleted}
          onChange={(e) => setShowDeleted(e.target.checked)}
        />
        <label htmlFor="domains-deleted">Include deleted domains</label>
      </div>
      <ListTable
        list={list}
        errorTitle="Could not list SIP domains"
        notices={<ErrorBanner error={remove.error} title="Could not delete the domain" />}
        caption="SIP domains"
        rows={rows}
        rowKey={(d) => d.name}
        empty="No SIP domains yet."
        columns={[
          {
            header: "Domain",
            cell: (d) => (
              <a href={href("sip-domains", lastSegment(d.name))}>
                <code>{d.fqdn || lastSegment(d.name)}</code>
              </a>
            ),
          },
          { header: "Name", cell: (d) => d.displayName },
          {
            header: "Type",
            cell: (d) =>
              d.type === DomainType.COLLAB_DIRECT_ROUTING
                ? `Collaboration (${d.collabDirectRoutingStatus?.verified === true ? "verified" : "not verified"})`
                : "Standard",
          },
          { header: "Termination", cell: (d) => enumName(Mode, d.callTerminationMode) },
          { header: "Handlers", cell: (d) => d.callTerminationHandlerUris.join(" ") },
          { header: "CIDR blocks", cell: (d) => d.cidrBlocks.map((b) => b.cidrBlock).join(" ") },
          { header: "Created", cell: (d) => time(d.createTime) },
          { header: "Deleted", cell: (d) => (d.deleteTime === undefined ? "" : time(d.deleteTime)) },
          {
            header: "Actions",
            cell: (d) =>
              canWrite === true && d.deleteTime === undefined ? (
                <span className="actions">
                  <button
                    type="button"
                    onClick={() => setEditing(d.name)}
                    aria-label={`Edit ${lastSegment(d.name)}`}
                  >
                    Edit
                  </button>
                  {confirming === d.name ? (
                    <button
                      type="button"
                      className="danger"
                      disabled={remove.isPending}
                      onClick={() => remove.mutate({ name: d.name })}
                    >
                      Confirm deleting {lastSegment(d.name)}
                    </button>
                  ) : (
                    <button
                      type="button"
                      onClick={() => setConfirming(d.name)}
                      aria-label={`Delete ${lastSegment(d.name)}`}
                    >
                      Delete
                    </button>
                  )}
                </span>
              ) : null,
          },
        ]}
      />
      {edited !== undefined && (
        <DomainForm key={edited.name} domain={edited} onDone={() => setEditing(undefined)} />
      )}
    </Page>
  );
}

function DomainForm({ domain, onDone }: { domain?: SipDomain; onDone?: () => void }) {
  const { session } = useSession();
  const id = useId();
  const refresh = useRefresh(SipDomains);
  const [domainId, setDomainId] = useState("");
  const [displayName, setDisplayName] = useState(domain?.displayName ?? "");
  const [mode, setMode] = useState<Mode>(domain?.callTerminationMode ?? Mode.PROGRAMMABLE);
  const [handlers, setHandlers] = useState(domain?.callTerminationHandlerUris.join("\n") ?? "");
  const [cidrs, setCidrs] = useState(domain?.cidrBlocks.map((b) => b.cidrBlock).join("\n") ?? "");
  const [allowRegister, setAllowRegister] = useState(domain?.allowRegister ?? false);
  const [type, setType] = useState<DomainType>(domain?.type ?? DomainType.STANDARD);
  const [channelLimit, setChannelLimit] = useState(String(domain?.channelLimit || 1));
  const collab = type === DomainType.COLLAB_DIRECT_ROUTING;
  const editableBlocks = blocksEditable(domain) && !collab;
  const limit = Number(channelLimit);
  const limitInvalid = collab && (!Number.isInteger(limit) || limit < 1 || limit > 100);
  const parsed = editableBlocks ? parseCidrLines(cidrs) : { blocks: [], problems: [] };
  const idInvalid = domain === undefined && domainId !== "" && !DOMAIN_ID.test(domainId);
  const done = async () => {
    await refresh();
    if (domain === undefined) {
      setDomainId("");
      setDisplayName("");
      setHandlers("");
      setCidrs("");
      setAllowRegister(false);
    }
    onDone?.();
  };
  const create = useMutation(SipDomains.method.createSipDomain, { onSuccess: done });
  const update = useMutation(SipDomains.method.updateSipDomain, { onSuccess: done });
  const values = {
    displayName,
    callTerminationMode: mode,
    callTerminationHandlerUris: parseLines(handlers),
    allowRegister,
    ...(collab ? { channelLimit: limit } : {}),
    ...(editableBlocks ? { cidrBlocks: parsed.blocks.map((cidrBlock) => ({ cidrBlock })) } : {}),
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (parsed.problems.length > 0) return;
    if (domain === undefined)
      create.mutate({ parent: session.project, sipDomainId: domainId, sipDomain: { ...values, type } });
    else {
      update.mutate({
        sipDomain: { ...values, name: domain.name },
        updateMask: {
          paths: [
            "display_name",
            "call_termination_mode",
            "call_termination_handler_uris",
            "allow_register",
            ...(collab ? ["channel_limit"] : []),
            ...(editableBlocks ? ["cidr_blocks"] : []),
          ],
        },
      });
    }
  };
  const title = domain === undefined ? "Create a SIP domain" : `Edit ${lastSegment(domain.name)}`;
  const pending = create.isPending || update.isPending;
  return (
    <form className="card" onSubmit={submit} aria-label={title}>
      <h2>{title}</h2>
      <div className="row">
        {domain === undefined && (
          <TextField
            label="Domain ID"
            id={`${id}-id`}
            invalid={idInvalid && "2 to 30 lower-case letters, digits or dashes."}
            required
            value={domainId}
            onChange={setDomainId}
          />
        )}
        <TextField label="Display name" id={`${id}-name`} value={displayName} onChange={setDisplayName} />
        {domain === undefined && (
          <EnumSelect
            label="Type"
            id={`${id}-type`}
            enumType={DomainType}
            options={TYPES}
            value={type}
            onChange={setType}
          />
        )}
        <EnumSelect
          label="Call termination"
          id={`${id}-mode`}
          enumType={Mode}
          options={MODES}
          value={mode}
          onChange={setMode}
        />
      </div>
      <TextAreaField
        label="Handler URIs (one per line)"
        id={`${id}-handlers`}
        rows={2}
        value={handlers}
        onChange={setHandlers}
      />
      <div className="row">
        {collab && (
          <TextField
            label="Channel limit"
            id={`${id}-channels`}
            inputMode="numeric"
            invalid={limitInvalid && "1 to 100 simultaneous calls."}
            value={channelLimit}
            onChange={setChannelLimit}
          />
        )}
        <div className="check">
          <input
            id={`${id}-register`}
            type="checkbox"
            checked={allowRegister}
            onChange={(e) => setAllowRegister(e.target.checked)}
          />
          <label htmlFor={`${id}-register`}>Users may REGISTER</label>
        </div>
      </div>
      {editableBlocks ? (
        <TextAreaField
          label="CIDR blocks (one per line)"
          id={`${id}-cidrs`}
          hint={
            parsed.problems.length === 0 ? (
              `${parsed.blocks.length} ${parsed.blocks.length === 1 ? "block" : "blocks"}`
            ) : (
              <span role="alert">{parsed.problems.join("; ")}</span>
            )
          }
          rows={3}
          value={cidrs}
          aria-invalid={parsed.problems.length > 0}
          aria-describedby={`${id}-cidrs-hint`}
          onChange={setCidrs}
        />
      ) : (
        <p className="muted">
          {collab
            ? "CIDR blocks: the platform's signalling networks, kept by the service."
            : "CIDR blocks: read-only while the domain is domain-optional (the operator's)."}
        </p>
      )}
      <div className="actions">
        <button
          type="submit"
          className="primary"
          disabled={
            pending ||
            parsed.problems.length > 0 ||
            idInvalid ||
            limitInvalid ||
            (domain === undefined && domainId === "")
          }
        >
          {domain === undefined ? "Create domain" : "Save"}
        </button>
        {onDone !== undefined && (
          <button type="button" onClick={onDone}>
            Cancel
          </button>
        )}
      </div>
      <ErrorBanner error={create.error ?? update.error} title="Could not save the domain" />
    </form>
  );
}
