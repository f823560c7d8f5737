/** The operator's projects: the list, creating one, and opening one to work on its resources. */
import { createConnectQueryKey, useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { type Project, Projects } from "../../../gen/switchboard/admin/v1/projects_pb.js";
import { useSession } from "../app.js";
import { ErrorBanner } from "../kit/errors.js";
import { lastSegment, time } from "../kit/format.js";
import { Field, Page } from "../kit/page.js";
import { Table } from "../kit/table.js";
import { href, navigate } from "../router.js";

const PROJECT_ID = /^[a-z0-9]([a-z0-9-]{0,28}[a-z0-9])?$/;

export default function ProjectsPage() {
  const { session, setProject } = useSession();
  const queryClient = useQueryClient();
  const list = useInfiniteQuery(
    Projects.method.listProjects,
    { pageSize: 50, pageToken: "" },
    { pageParamKey: "pageToken", getNextPageParam: (l) => l.nextPageToken || undefined },
  );
  const [projectId, setProjectId] = useState("");
  const [displayName, setDisplayName] = useState("");
  const create = useMutation(Projects.method.createProject, {
    onSuccess: async () => {
      setProjectId("");
      setDisplayName("");
      await queryClient.invalidateQueries({
        queryKey: createConnectQueryKey({ schema: Projects, cardinality: undefined }),
      });
    },
  });
  const idInvalid = projectId !== "" && !PROJECT_ID.test(projectId);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({ projectId, project: { displayName } });
  };
  const open = (p: Project) => {
    setProject(p.name);
    navigate("numbers");
  };
  const rows = list.data?.pages.flatMap((p) => p.projects) ?? [];
  return (
    <Page title="Projects">
      <form className="card" onSubmit={submit} aria-label="Create a project">
        <h2>Create a project</h2>
        <div className="row">
          <Field
            label="Project ID"
            id="project-id"
            hint={idInvalid ? "Lower-case letters, digits and dashes; 1 to 30." : undefined}
          >
            <input
              id="project-id"
              required
              value={projectId}
              aria-invalid={idInvalid}
              onChange={(e) => setProjectId(e.target.value)}
            />
          </Field>
          <Field label="Display name" id="project-display-name">
            <input
              id="project-display-name"
              value={displayName}
              onChange={(e) => setDisplayName(e.target.value)}
            />
          </Field>
        </div>
        <button
          type="submit"
          className="primary"
          disabled={create.isPending || projectId === "" || idInvalid}
        >
          Create project
        </button>
        {create.isSuccess && (
          <p role="status">
            Created <code>{create.data.name}</code>. Next: <a href={href("api-keys")}>create an API key</a>{" "}
            for it.
          </p>
        )}
        <ErrorBanner error={create.error} title="Could not create the project" />
      </form>
      <ErrorBanner error={list.error} title="Could not list projects" />
      {list.isPending ? (
        <p role="status">Loading…</p>
      ) : (
        <Table
          caption="Projects"
          rows={rows}
          rowKey={(p) => p.name}
          empty="No projects yet: create the first one above."
          hasMore={list.hasNextPage}
          loadingMore={list.isFetchingNextPage}
          onLoadMore={() => void list.fetchNextPage()}
          columns={[
            { header: "Project", cell: (p) => <code>{lastSegment(p.name)}</code> },
            { header: "Display name", cell: (p) => p.displayName },
            { header: "Created", cell: (p) => time(p.createTime) },
            {
              header: "Actions",
              cell: (p) => (
                <button type="button" onClick={() => open(p)} aria-label={`Open ${lastSegment(p.name)}`}>
                  {session.project === p.name ? "Opened" : "Open"}
                </button>
              ),
            },
          ]}
        />
      )}
    </Page>
  );
}
