/**
 * The app: signed out, the sign-in form; signed in, the navigation (the
 * operator's admin pages for the operator only; a project's pages once a
 * project is chosen) and the page of the route, loaded on first visit.
 */
import { TransportProvider } from "@connectrpc/connect-query";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createContext, lazy, type ReactNode, Suspense, useContext, useMemo, useState } from "react";
import { EmptyState } from "./kit/empty.js";
import { href, useRoute } from "./router.js";
import { loadSession, type Session, saveSession } from "./session.js";
import { SignIn } from "./sign-in.js";
import { createConsoleTransport } from "./transport.js";

const ProjectsPage = lazy(() => import("./admin/projects.js"));
const ApiKeysPage = lazy(() => import("./admin/api-keys.js"));
const ServiceAccountsPage = lazy(() => import("./admin/service-accounts.js"));
const InventoryPage = lazy(() => import("./operator/inventory.js"));
const SimulatorPage = lazy(() => import("./operator/simulator.js"));
const NumbersPage = lazy(() => import("./numbers/numbers.js"));
const RangesPage = lazy(() => import("./numbers/ranges.js"));
const ListingsPage = lazy(() => import("./numbers/regulatory-listings.js"));
const CallsPage = lazy(() => import("./calls/calls.js"));
const CallPage = lazy(() => import("./calls/call.js"));
const WebhooksPage = lazy(() => import("./webhooks/webhooks.js"));
const MessagesPage = lazy(() => import("./messages/messages.js"));
const SipDomainsPage = lazy(() => import("./sip-domains/sip-domains.js"));
const SipDomainPage = lazy(() => import("./sip-domains/sip-domain.js"));

interface SessionContextValue {
  session: Session;
  setProject: (project: string) => void;
  signOut: () => void;
}

const SessionContext = createContext<SessionContextValue | undefined>(undefined);

export function useSession(): SessionContextValue {
  const s = useContext(SessionContext);
  if (s === undefined) throw new Error("useSession outside the signed-in app");
  return s;
}

export function App() {
  const [session, setSession] = useState<Session | undefined>(loadSession);
  const update = (s: Session | undefined) => {
    saveSession(s);
    setSession(s);
  };
  if (session === undefined) return <SignIn onSignedIn={update} />;
  return (
    <SignedIn
      // A new credential starts from a clean cache.
      key={session.token}
      session={session}
      setProject={(project) => update({ ...session, project })}
      signOut={() => update(undefined)}
    />
  );
}

function SignedIn(props: SessionContextValue) {
  const transport = useMemo(() => createConsoleTransport(props.session.token), [props.session.token]);
  const queryClient = useMemo(
    () => new QueryClient({ defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false } } }),
    [],
  );
  const value = useMemo(
    () => ({ session: props.session, setProject: props.setProject, signOut: props.signOut }),
    [props.session, props.setProject, props.signOut],
  );
  return (
    <SessionContext.Provider value={value}>
      <TransportProvider transport={transport}>
        <QueryClientProvider client={queryClient}>
          <Shell />
        </QueryClientProvider>
      </TransportProvider>
    </SessionContext.Provider>
  );
}

interface NavItem {
  route: string;
  label: string;
  operator?: boolean;
  project?: boolean;
}

const NAV: NavItem[] = [
  { route: "projects", label: "Projects", operator: true },
  { route: "api-keys", label: "API keys", operator: true },
  { route: "service-accounts", label: "Service accounts", operator: true },
  { route: "inventory", label: "Inventory", operator: true },
  { route: "simulator", label: "Simulator", operator: true },
  { route: "numbers", label: "Numbers", project: true },
  { route: "ranges", label: "Number ranges", project: true },
  { route: "listings", label: "Regulatory listings", project: true },
  { route: "calls", label: "Calls", project: true },
  { route: "messages", label: "Messages", project: true },
  { route: "sip-domains", label: "SIP domains", project: true },
  { route: "webhooks", label: "Webhooks", project: true },
];

function Shell() {
  const { session, signOut } = useSession();
  const route = useRoute();
  const page = route[0] ?? (session.operator ? "projects" : "numbers");
  const items = NAV.filter(
    (n) => (n.operator !== true || session.operator) && (n.project !== true || session.project !== ""),
  );
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Switchboard</span>
        <span className="who">
          {session.operator ? "Operator" : "Project credential"}
          {session.project !== "" && (
            <>
              {" · "}
              <code>{session.project}</code>
            </>
          )}
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <nav aria-label="Pages">
        <ul>
          {items.map((n) => (
            <li key={n.route}>
              <a
                href={href(n.route)}
                aria-current={
                  n.route === page || (page === "call" && n.route === "calls") ? "page" : undefined
                }
              >
                {n.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main">
        <Suspense fallback={<p role="status">Loading…</p>}>{pageOf(page, route, session)}</Suspense>
      </main>
    </>
  );
}

function pageOf(page: string, route: string[], session: Session): ReactNode {
  const needsOperator = NAV.find((n) => n.route === page)?.operator === true;
  if (needsOperator && !session.operator) {
    return (
      <EmptyState title="This page is the operator's">Sign in with the operator token to use it.</EmptyState>
    );
  }
  const needsProject = NAV.find((n) => n.route === page)?.project === true || page === "call";
  if (needsProject && session.project === "") {
    return (
      <EmptyState title="No project chosen">
        Open a project from <a href={href("projects")}>Projects</a> first.
      </EmptyState>
    );
  }
  switch (page) {
    case "projects":
      return <ProjectsPage />;
    case "api-keys":
      return <ApiKeysPage />;
    case "service-accounts":
      return <ServiceAccountsPage />;
    case "inventory":
      return <InventoryPage />;
    case "simulator":
      return <SimulatorPage />;
    case "numbers":
      return <NumbersPage />;
    case "ranges":
      return <RangesPage />;
    case "listings":
      return <ListingsPage />;
    case "calls":
      return <CallsPage />;
    case "call":
      return <CallPage id={route[1] ?? ""} />;
    case "webhooks":
      return <WebhooksPage />;
    case "messages":
      return <MessagesPage />;
    case "sip-domains":
      return route[1] === undefined ? <SipDomainsPage /> : <SipDomainPage id={route[1]} />;
    default:
      return <EmptyState title="No such page" />;
  }
}
