/**
 * The operator's service accounts: the list, creating one bound to a
 * project with a role, and a key for one — its key file (for the SDKs) shown
 * once, with copy and download.
 */
import { createConnectQueryKey, useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { ServiceAccounts } from "../../../gen/switchboard/admin/v1/service_accounts_pb.js";
import { useSession } from "../app.js";
import { ErrorBanner } from "../kit/errors.js";
import { lastSegment, time } from "../kit/format.js";
import { Field, Page } from "../kit/page.js";
import { SecretDialog } from "../kit/secret-dialog.js";
import { Table } from "../kit/table.js";
import { ROLES } from "./api-keys.js";

const ACCOUNT_ID = /^[a-z]([a-z0-9-]{0,28}[a-z0-9])?$/;

export default function ServiceAccountsPage() {
  const { session } = useSession();
  const queryClient = useQueryClient();
  const refresh = () =>
    queryClient.invalidateQueries({
      queryKey: createConnectQueryKey({ schema: ServiceAccounts, cardinality: undefined }),
    });
  const list = useInfiniteQuery(
    ServiceAccounts.method.listServiceAccounts,
    { pageSize: 50, pageToken: "" },
    { pageParamKey: "pageToken", getNextPageParam: (l) => l.nextPageToken || undefined },
  );
  const [accountId, setAccountId] = useState("");
  const [projectId, setProjectId] = useState(session.project === "" ? "" : lastSegment(session.project));
  const [role, setRole] = useState(ROLES[0]!);
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
  const idInvalid = accountId !== "" && !ACCOUNT_ID.test(accountId);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      serviceAccountId: accountId,
      serviceAccount: { bindings: [{ project: `projects/${projectId}`, roles: [role] }] },
    });
  };
  const rows = list.data?.pages.flatMap((p) => p.serviceAccounts) ?? [];
  return (
    <Page title="Service accounts">
      <form className="card" onSubmit={submit} aria-label="Create a service account">
        <h2>Create a service account</h2>
        <div className="row">
          <Field
            label="Account ID"
            id="sa-id"
            hint={idInvalid ? "A letter, then lower-case letters, digits or dashes." : undefined}
          >
            <input
              id="sa-id"
              required
              value={accountId}
              aria-invalid={idInvalid}
              onChange={(e) => setAccountId(e.target.value)}
            />
          </Field>
          <Field label="Project ID" id="sa-project">
            <input
              id="sa-project"
              required
              value={projectId}
              onChange={(e) => setProjectId(e.target.value)}
            />
          </Field>
          <Field label="Role" id="sa-role">
            <select id="sa-role" value={role} onChange={(e) => setRole(e.target.value)}>
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
          </Field>
        </div>
        <button
          type="submit"
          className="primary"
          disabled={create.isPending || accountId === "" || idInvalid || projectId === ""}
        >
          Create service account
        </button>
        <ErrorBanner error={create.error} title="Could not create the service account" />
      </form>
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
      <ErrorBanner error={list.error} title="Could not list service accounts" />
      {list.isPending ? (
        <p role="status">Loading…</p>
      ) : (
        <Table
          caption="Service accounts"
          rows={rows}
          rowKey={(a) => a.name}
          empty="No service accounts yet."
          hasMore={list.hasNextPage}
          loadingMore={list.isFetchingNextPage}
          onLoadMore={() => void list.fetchNextPage()}
          columns={[
            { header: "Account", cell: (a) => <code>{lastSegment(a.name)}</code> },
            { header: "Email", cell: (a) => a.email },
            {
              header: "Bindings",
              cell: (a) =>
                a.bindings
                  .map((b) => `${b.project}: ${[...b.roles, ...b.permissions].join(", ")}`)
                  .join("; "),
            },
            { header: "Created", cell: (a) => time(a.createTime) },
            {
              header: "Actions",
              cell: (a) => (
                <button
                  type="button"
                  disabled={createKey.isPending}
                  onClick={() => createKey.mutate({ parent: a.name })}
                  aria-label={`Create a key for ${lastSegment(a.name)}`}
                >
                  Create key
                </button>
              ),
            },
          ]}
        />
      )}
    </Page>
  );
}
