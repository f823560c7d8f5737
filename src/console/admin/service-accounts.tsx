/**
 * The operator's service accounts: the list, creating one bound to a
 * project with a role, and a key for one — its key file (for the SDKs) shown
 * once, with copy and download; disabling, enabling and deleting one.
 */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useState } from "react";
import { ServiceAccounts } from "../../../gen/switchboard/admin/v1/service_accounts_pb.js";
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

const ACCOUNT_ID = /^[a-z]([a-z0-9-]{0,28}[a-z0-9])?$/;

export default function ServiceAccountsPage() {
  const refresh = useRefresh(ServiceAccounts);
  const list = useInfiniteQuery(
    ServiceAccounts.method.listServiceAccounts,
    { pageSize: 50, pageToken: "" },
    PAGED,
  );
  const [accountId, setAccountId] = useState("");
  const binding = useBinding();
  const [keyFile, setKeyFile] = useState<{ account: string; file: string } | undefined>(undefined);
  const create = useMutation(ServiceAccounts.method.createServiceAccount, {
    onSuccess: async () => {
      setAccountId("");
      await refresh();
    },
  });
  const createKey = useMutation(ServiceAccounts.method.createServiceAccountKey, {
    onSuccess: (res, input) => setKeyFile({ account: lastSegment(input.parent ?? ""), file: res.keyFile }),
  });
  const update = useMutation(ServiceAccounts.method.updateServiceAccount, { onSuccess: refresh });
  const remove = useMutation(ServiceAccounts.method.deleteServiceAccount, { onSuccess: refresh });
  const idInvalid = accountId !== "" && !ACCOUNT_ID.test(accountId);
  const submit = () =>
    create.mutate({ serviceAccountId: accountId, serviceAccount: { bindings: binding.bindings } });
  const rows = pagedRows(list, (p) => p.serviceAccounts);
  return (
    <Page title="Service accounts">
      <FormCard
        label="Create a service account"
        onSubmit={submit}
        submit="Create service account"
        disabled={create.isPending || accountId === "" || idInvalid || binding.projectId === ""}
        error={create.error}
        errorTitle="Could not create the service account"
      >
        <div className="row">
          <TextField
            label="Account ID"
            id="sa-id"
            invalid={idInvalid && "A letter, then lower-case letters, digits or dashes."}
            required
            value={accountId}
            onChange={setAccountId}
          />
          <BindingFields idPrefix="sa" binding={binding} />
        </div>
      </FormCard>
      {keyFile !== undefined && (
        <SecretDialog
          title="The key file"
          description="The SDKs sign in with this file. It holds the private key and is shown this once: download or copy it now."
          secret={keyFile.file}
          fileName={`${keyFile.account}-key.json`}
          mimeType="application/json"
          onClose={() => setKeyFile(undefined)}
        />
      )}
      <ErrorBanner error={createKey.error} title="Could not create a key" />
      <ErrorBanner error={update.error ?? remove.error} title="Could not change the service account" />
      <ListTable
        list={list}
        errorTitle="Could not list service accounts"
        caption="Service accounts"
        rows={rows}
        rowKey={(a) => a.name}
        empty="No service accounts yet."
        columns={[
          { header: "Account", cell: (a) => <code>{lastSegment(a.name)}</code> },
          { header: "Email", cell: (a) => a.email },
          { header: "Bindings", cell: (a) => bindingsText(a.bindings) },
          { header: "State", cell: (a) => (a.disabled ? "Disabled" : "Enabled") },
          { header: "Created", cell: (a) => time(a.createTime) },
          {
            header: "Actions",
            cell: (a) => (
              <span className="actions">
                <button
                  type="button"
                  disabled={createKey.isPending}
                  onClick={() => createKey.mutate({ parent: a.name })}
                  aria-label={`Create a key for ${lastSegment(a.name)}`}
                >
                  Create a key
                </button>
                <button
                  type="button"
                  disabled={update.isPending}
                  aria-label={`${a.disabled ? "Enable" : "Disable"} ${lastSegment(a.name)}`}
                  onClick={() =>
                    update.mutate({
                      serviceAccount: { name: a.name, disabled: !a.disabled },
                      updateMask: { paths: ["disabled"] },
                    })
                  }
                >
                  {a.disabled ? "Enable" : "Disable"}
                </button>
                <ConfirmButton
                  label="Delete"
                  target={lastSegment(a.name)}
                  pending={remove.isPending}
                  onConfirm={() => remove.mutate({ name: a.name })}
                />
              </span>
            ),
          },
        ]}
      />
    </Page>
  );
}
