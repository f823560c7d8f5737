/**
 * Signing in: a bearer token and, for a project's credential, its project.
 * The token is tried on the API before it is kept: ListProjects answers the
 * operator only; a project credential is tried on its project. A refusal
 * shows the server's message.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { type FormEvent, useId, useState } from "react";
import { PhoneNumberInstances } from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { Projects } from "../../gen/switchboard/admin/v1/projects_pb.js";
import { ErrorBanner } from "./kit/errors.js";
import { Field } from "./kit/page.js";
import type { Session } from "./session.js";
import { createConsoleTransport } from "./transport.js";

const PROJECT_ID = /^[a-z0-9]([a-z0-9-]{0,28}[a-z0-9])?$/;

/** Tries `token`; resolves with the session it opens, or rejects with the API's error. */
export async function trySignIn(token: string, projectId: string): Promise<Session> {
  const transport = createConsoleTransport(token);
  const project = projectId === "" ? "" : `projects/${projectId}`;
  try {
    await createClient(Projects, transport).listProjects({ pageSize: 1 });
    return { token, project, operator: true };
  } catch (err) {
    if (ConnectError.from(err).code !== Code.PermissionDenied) throw err;
  }
  if (project === "") {
    throw new ConnectError(
      "this credential is not the operator's: enter the project it works on",
      Code.InvalidArgument,
    );
  }
  try {
    await createClient(PhoneNumberInstances, transport).listPhoneNumberInstances({
      parent: project,
      pageSize: 1,
    });
  } catch (err) {
    // A key without numbering permissions may still do other things on the project.
    if (ConnectError.from(err).code !== Code.PermissionDenied) throw err;
  }
  return { token, project, operator: false };
}

export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const id = useId();
  const [token, setToken] = useState("");
  const [projectId, setProjectId] = useState("");
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const projectInvalid = projectId !== "" && !PROJECT_ID.test(projectId);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await trySignIn(token.trim(), projectId.trim()));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="sign-in" id="main">
      <h1>Switchboard console</h1>
      <form onSubmit={(e) => void submit(e)} aria-describedby={`${id}-about`}>
        <p id={`${id}-about`} className="muted">
          Sign in with an API key, a service account's access token or the operator token (
          <code>data/operator-token</code>). It is kept for this tab only and sent as a bearer header.
        </p>
        <Field label="Token" id={`${id}-token`}>
          <input
            id={`${id}-token`}
            type="password"
            autoComplete="off"
            required
            value={token}
            onChange={(e) => setToken(e.target.value)}
          />
        </Field>
        <Field
          label="Project ID"
          id={`${id}-project`}
          hint={
            projectInvalid
              ? "Lower-case letters, digits and dashes."
              : "Required for an API key or service account."
          }
        >
          <input
            id={`${id}-project`}
            autoComplete="off"
            value={projectId}
            aria-invalid={projectInvalid}
            aria-describedby={`${id}-project-hint`}
            onChange={(e) => setProjectId(e.target.value)}
          />
        </Field>
        <button type="submit" className="primary" disabled={busy || token.trim() === "" || projectInvalid}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        <ErrorBanner error={error} title="Sign-in refused" />
      </form>
    </main>
  );
}
