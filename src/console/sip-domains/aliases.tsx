/**
 * A SIP domain's aliases (Aliases): load balancers over SIP endpoints, with
 * failover call handlers. The list; creating one, its endpoints checked as
 * typed (endpoints.ts); deleting one (asked to confirm). A collaboration
 * domain's `collab-proxies` alias is the service's: listed, not offered
 * for deletion. Writes need `voice.sipDomains.update`, as the API says.
 */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useId, useState } from "react";
import { Aliases } from "../../../gen/enfonica/voice/v1beta1/aliases_pb.js";
import type { SipDomain } from "../../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { useCan } from "../kit/can.js";
import { ConfirmButton } from "../kit/confirm-button.js";
import { ErrorBanner } from "../kit/errors.js";
import { TextAreaField, TextField } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { parseLines } from "../kit/lists.js";
import { useRefresh } from "../kit/refresh.js";
import { endpointText, parseEndpoints } from "./endpoints.js";

const ALIAS_ID = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** The alias the service keeps on collaboration domains. */
const SERVICE_ALIAS = "collab-proxies";

export function AliasesSection({ domain }: { domain: SipDomain }) {
  const deleted = domain.deleteTime !== undefined;
  const canWrite = useCan(Aliases.method.createAlias, { parent: domain.name });
  const refresh = useRefresh(Aliases);
  const list = useInfiniteQuery(
    Aliases.method.listAliases,
    { parent: domain.name, pageSize: 50, pageToken: "" },
    PAGED,
  );
  const remove = useMutation(Aliases.method.deleteAlias, { onSuccess: refresh });
  const rows = pagedRows(list, (p) => p.aliases);
  return (
    <section aria-labelledby="aliases-title">
      <h2 id="aliases-title">Aliases</h2>
      <p className="muted">
        An alias load-balances the domain's calls over SIP endpoints (lower priority first, then by weight),
        and falls back to call handlers when no endpoint takes a call.
      </p>
      {!deleted && canWrite === true && <AddAlias domain={domain} />}
      <ListTable
        list={list}
        errorTitle="Could not list the domain's aliases"
        notices={<ErrorBanner error={remove.error} title="Could not delete the alias" />}
        caption="The domain's aliases"
        rows={rows}
        rowKey={(a) => a.name}
        empty="The domain has no aliases."
        columns={[
          { header: "Alias", cell: (a) => <code>{a.aliasId}</code> },
          { header: "Name", cell: (a) => a.displayName },
          {
            header: "Endpoints",
            cell: (a) =>
              a.config.case === "loadBalancerConfig"
                ? a.config.value.endpoints.map((e) => <div key={e.uri}>{endpointText(e)}</div>)
                : "—",
          },
          {
            header: "Failover handlers",
            cell: (a) =>
              a.config.case === "loadBalancerConfig" ? a.config.value.failoverCallHandlerUris.join(" ") : "",
          },
          { header: "Created", cell: (a) => time(a.createTime) },
          {
            header: "Actions",
            cell: (a) =>
              !deleted && canWrite === true && a.aliasId !== SERVICE_ALIAS ? (
                <ConfirmButton
                  label="Delete"
                  target={`alias ${a.aliasId}`}
                  pending={remove.isPending}
                  onConfirm={() => remove.mutate({ name: a.name })}
                />
              ) : null,
          },
        ]}
      />
    </section>
  );
}

function AddAlias({ domain }: { domain: SipDomain }) {
  const id = useId();
  const refresh = useRefresh(Aliases);
  const [aliasId, setAliasId] = useState("");
  const [displayName, setDisplayName] = useState("");
  const [endpoints, setEndpoints] = useState("");
  const [failover, setFailover] = useState("");
  const parsed = parseEndpoints(endpoints);
  const idBad = aliasId !== "" && !ALIAS_ID.test(aliasId);
  const create = useMutation(Aliases.method.createAlias, {
    onSuccess: async () => {
      setAliasId("");
      setDisplayName("");
      setEndpoints("");
      setFailover("");
      await refresh();
    },
  });
  return (
    <FormCard
      label="Add an alias"
      onSubmit={() =>
        create.mutate({
          parent: domain.name,
          aliasId,
          alias: {
            displayName,
            config: {
              case: "loadBalancerConfig",
              value: { endpoints: parsed.endpoints, failoverCallHandlerUris: parseLines(failover) },
            },
          },
        })
      }
      submit="Add alias"
      disabled={create.isPending || aliasId === "" || idBad || parsed.problems.length > 0}
      error={create.error}
      errorTitle="Could not add the alias"
    >
      <div className="row">
        <TextField
          label="Alias ID"
          id={`${id}-id`}
          invalid={idBad && "1 to 63 lower-case letters, digits or dashes."}
          required
          value={aliasId}
          onChange={setAliasId}
        />
        <TextField label="Display name" id={`${id}-name`} value={displayName} onChange={setDisplayName} />
      </div>
      <TextAreaField
        label="Endpoints (one per line)"
        id={`${id}-endpoints`}
        hint={
          parsed.problems.length === 0 ? (
            `${parsed.endpoints.length} endpoints: sip:host[:port] priority=N weight=N, or disabled.`
          ) : (
            <span role="alert">{parsed.problems.join("; ")}</span>
          )
        }
        rows={3}
        value={endpoints}
        aria-invalid={parsed.problems.length > 0}
        aria-describedby={`${id}-endpoints-hint`}
        onChange={setEndpoints}
      />
      <TextAreaField
        label="Failover call handler URIs (one per line)"
        id={`${id}-failover`}
        rows={2}
        value={failover}
        onChange={setFailover}
      />
    </FormCard>
  );
}
