/**
 * The operator's API keys: the list, and creating one bound to a project
 * with a role; the secret is shown once (copy, download); disabling,
 * enabling and deleting one.
 */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useState } from "react";
import { ApiKeys } from "../../../gen/switchboard/admin/v1/api_keys_pb.js";
import { ConfirmButton } from "../kit/confirm-button.js";
import { ErrorBanner } from "../kit/errors.js";
import { TextField } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { lastSegment, time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";
import { SecretDialog } from "../kit/secret-dialog.js";
import { BindingFields, bindingsText, useBinding } from "./bindings.js";

export default function ApiKeysPage() {
  const refresh = useRefresh(ApiKeys);
  const list = useInfiniteQuery(ApiKeys.method.listApiKeys, { pageSize: 50, pageToken: "" }, PAGED);
  const [displayName, setDisplayName] = useState("");
  const binding = useBinding();
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const create = useMutation(ApiKeys.method.createApiKey, {
    onSuccess: async (res) => {
      setSecret(res.secret);
      await refresh();
    },
  });
  const update = useMutation(ApiKeys.method.updateApiKey, { onSuccess: refresh });
  const remove = useMutation(ApiKeys.method.deleteApiKey, { onSuccess: refresh });
  const submit = () => create.mutate({ apiKey: { displayName, bindings: binding.bindings } });
  const rows = pagedRows(list, (p) => p.apiKeys);
  return (
    <Page title="API keys">
      <FormCard
        label="Create an API key"
        onSubmit={submit}
        submit="Create key"
        disabled={create.isPending || binding.projectId === ""}
        error={create.error}
        errorTitle="Could not create the key"
      >
        <div className="row">
          <TextField
            label="Display name"
            id="key-display-name"
            value={displayName}
            onChange={setDisplayName}
          />
          <BindingFields idPrefix="key" binding={binding} />
        </div>
      </FormCard>
      {secret !== undefined && (
        <SecretDialog
          title="The key's secret"
          description="Use it as a bearer token. It is shown this once: copy or download it now."
          secret={secret}
          fileName={`switchboard-key-${binding.projectId}.txt`}
          onClose={() => setSecret(undefined)}
        />
      )}
      <ListTable
        list={list}
        errorTitle="Could not list API keys"
        notices={<ErrorBanner error={update.error ?? remove.error} title="Could not change the key" />}
        caption="API keys"
        rows={rows}
        rowKey={(k) => k.name}
        empty="No API keys yet."
        columns={[
          { header: "Key", cell: (k) => <code>{lastSegment(k.name)}</code> },
          { header: "Display name", cell: (k) => k.displayName },
          { header: "Prefix", cell: (k) => <code>{k.secretPrefix}</code> },
          { header: "Bindings", cell: (k) => bindingsText(k.bindings) },
          { header: "State", cell: (k) => (k.disabled ? "Disabled" : "Enabled") },
          { header: "Created", cell: (k) => time(k.createTime) },
          {
            header: "Actions",
            cell: (k) => (
              <span className="actions">
                <button
                  type="button"
                  disabled={update.isPending}
                  aria-label={`${k.disabled ? "Enable" : "Disable"} ${lastSegment(k.name)}`}
                  onClick={() =>
                    update.mutate({
                      apiKey: { name: k.name, disabled: !k.disabled },
                      updateMask: { paths: ["disabled"] },
                    })
                  }
                >
                  {k.disabled ? "Enable" : "Disable"}
                </button>
                <ConfirmButton
                  label="Delete"
                  target={lastSegment(k.name)}
                  pending={remove.isPending}
                  onConfirm={() => remove.mutate({ name: k.name })}
                />
              </span>
            ),
          },
        ]}
      />
    </Page>
  );
}
