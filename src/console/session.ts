/**
 * The signed-in credential, for this tab only (sessionStorage): a bearer
 * token (an API key, a service account's access token or the operator
 * token) and, for project credentials, the project it works on. Never a
 * cookie: the API reads the Authorization header only.
 */
export interface Session {
  token: string;
  /** `projects/{id}`; empty for the operator until one is chosen. */
  project: string;
  /** The credential answered ListProjects: the operator. */
  operator: boolean;
}

const KEY = "switchboard.console.session";

export function loadSession(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(KEY);
    if (raw === null) return undefined;
    const s = JSON.parse(raw) as Partial<Session>;
    if (typeof s.token !== "string" || s.token === "") return undefined;
    return {
      token: s.token,
      project: typeof s.project === "string" ? s.project : "",
      operator: s.operator === true,
    };
  } catch {
    return undefined;
  }
}

export function saveSession(session: Session | undefined): void {
  if (session === undefined) sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, JSON.stringify(session));
}
