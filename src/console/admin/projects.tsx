/** The operator's projects: the list, creating one, and opening one to work on its resources. */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useState } from "react";
import { type Project, Projects } from "../../../gen/switchboard/admin/v1/projects_pb.js";
import { useSession } from "../app.js";
import { TextField } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { lastSegment, time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";
import { href, navigate } from "../router.js";

const PROJECT_ID = /^[a-z0-9]([a-z0-9-]{0,28}[a-z0-9])?$/;

export default function ProjectsPage() {
  const { session, setProject } = useSession();
  const refresh = useRefresh(Projects);
  const list = useInfiniteQuery(Projects.method.listProjects, { pageSize: 50, pageToken: "" }, PAGED);
  const [projectId, setProjectId] = useState("");
  const [displayName, setDisplayName] = useState("");
  const create = useMutation(Projects.method.createProject, {
    onSuccess: async () => {
      setProjectId("");
      setDisplayName("");
      await refresh();
    },
  });
  const idInvalid = projectId !== "" && !PROJECT_ID.test(projectId);
  const submit = () => create.mutate({ projectId, project: { displayName } });
  const open = (p: Project) => {
    setProject(p.name);
    navigate("numbers");
  };
  const rows = pagedRows(list, (p) => p.projects);
  return (
    <Page title="Projects">
      <FormCard
        label="Create a project"
        onSubmit={submit}
        submit="Create project"
        disabled={create.isPending || projectId === "" || idInvalid}
        status={
          create.isSuccess && (
            <p role="status">
              Created <code>{create.data.name}</code>. Next: <a href={href("api-keys")}>create an API key</a>{" "}
              for it.
            </p>
          )
        }
        error={create.error}
        errorTitle="Could not create the project"
      >
        <div className="row">
          <TextField
            label="Project ID"
            id="project-id"
            invalid={idInvalid && "Lower-case letters, digits and dashes; 1 to 30."}
            required
            value={projectId}
            onChange={setProjectId}
          />
          <TextField
            label="Display name"
            id="project-display-name"
            value={displayName}
            onChange={setDisplayName}
          />
        </div>
      </FormCard>
      <ListTable
        list={list}
        errorTitle="Could not list projects"
        caption="Projects"
        rows={rows}
        rowKey={(p) => p.name}
        empty="No projects yet: create the first one above."
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
    </Page>
  );
}
