/**
 * The operator's API keys: the list, and creating one bound to a project
 * with a role; the secret is shown once (copy, download).
 */
import { createConnectQueryKey, useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { ApiKeys } from "../../../gen/switchboard/admin/v1/api_keys_pb.js";
import { useSession } from "../app.js";
import { ErrorBanner } from "../kit/errors.js";
import { lastSegment, time } from "../kit/format.js";
import { Field, Page } from "../kit/page.js";
import { SecretDialog } from "../kit/secret-dialog.js";
import { Table } from "../kit/table.js";

export const ROLES = [
  "roles/owner",
  "roles/viewer",
  "roles/numbering.admin",
  "roles/voice.admin",
  "roles/messaging.admin",
  "roles/webhooks.verifier",
];

export default function ApiKeysPage() {
  const { session } = useSession();
  const queryClient = useQueryClient();
  const list = useInfiniteQuery(
    ApiKeys.method.listApiKeys,
    { pageSize: 50, pageToken: "" },
    { pageParamKey: "pageToken", getNextPageParam: (l) => l.nextPageToken || undefined },
  );
  const [displayName, setDisplayName] = useState("");
  const [projectId, setProjectId] = useState(session.project === "" ? "" : lastSegment(session.project));
  const [role, setRole] = useState(ROLES[0]!);
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const create = useMutation(ApiKeys.method.createApiKey, {
    onSuccess: async (res) => {
      setSecret(res.secret);
      await queryClient.invalidateQueries({
        queryKey: createConnectQueryKey({ schema: ApiKeys, cardinality: undefined }),
      });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      apiKey: { displayName, bindings: [{ project: `projects/${projectId}`, roles: [role] }] },
    });
  };
  const rows = list.data?.pages.flatMap((p) => p.apiKeys) ?? [];
  return (
    <Page title="API keys">
      <form className="card" onSubmit={submit} aria-label="Create an API key">
        <h2>Create an API key</h2>
        <div className="row">
          <Field label="Display name" id="key-display-name">
            <input
              id="key-display-name"
              value={displayName}
              onChange={(e) => setDisplayName(e.target.value)}
            />
          </Field>
          <Field label="Project ID" id="key-project">
            <input
              id="key-project"
              required
              value={projectId}
              onChange={(e) => setProjectId(e.target.value)}
            />
          </Field>
          <Field label="Role" id="key-role">
            <select id="key-role" value={role} onChange={(e) => setRole(e.target.value)}>
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
          </Field>
        </div>
        <button type="submit" className="primary" disabled={create.isPending || projectId === ""}>
          Create key
        </button>
        <ErrorBanner error={create.error} title="Could not create the key" />
      </form>
      {secret !== undefined && (
        <SecretDialog
          title="The key's secret"
          description="Use it as a bearer token. It is shown this once: copy or download it now."
          secret={secret}
          fileName={`switchboard-key-${projectId}.txt`}
          onClose={() => setSecret(undefined)}
        />
      )}
      <ErrorBanner error={list.error} title="Could not list API keys" />
      {list.isPending ? (
        <p role="status">Loading…</p>
      ) : (
        <Table
          caption="API keys"
          rows={rows}
          rowKey={(k) => k.name}
          empty="No API keys yet."
          hasMore={list.hasNextPage}
          loadingMore={list.isFetchingNextPage}
          onLoadMore={() => void list.fetchNextPage()}
          columns={[
            { header: "Key", cell: (k) => <code>{lastSegment(k.name)}</code> },
            { header: "Display name", cell: (k) => k.displayName },
            { header: "Prefix", cell: (k) => <code>{k.secretPrefix}</code> },
            {
              header: "Bindings",
              cell: (k) =>
                k.bindings
                  .map((b) => `${b.project}: ${[...b.roles, ...b.permissions].join(", ")}`)
                  .join("; "),
            },
            { header: "State", cell: (k) => (k.disabled ? "Disabled" : "Enabled") },
            { header: "Created", cell: (k) => time(k.createTime) },
          ]}
        />
      )}
    </Page>
  );
}
