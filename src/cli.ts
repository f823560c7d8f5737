/**
 * `switchboard` — the operator's command line. Talks to a running server
 * through the admin API and the public API (Connect protocol) with the
 * operator token. `switchboard --help` lists the commands; docs/cli.md
 * shows each with an example.
 *
 * Fast to start: no server code is imported, and a command group's module
 * (with its generated code, @bufbuild/protobuf and connect-node) is loaded
 * only when the group is named, so `switchboard --help` loads none of them.
 * The commands live in src/cli/, one file per area.
 */
import { type Group, UsageError } from "./cli/command.js";
import { type CliIo, dispatch, NoCommandError } from "./cli/dispatch.js";

export { UsageError } from "./cli/command.js";

const admin = () => import("./cli/admin.js").then((m) => m.adminCommands);
const numbering = () => import("./cli/numbering.js").then((m) => m.numberingCommands);
const voice = () => import("./cli/voice.js").then((m) => m.voiceCommands);
const serviceAccounts = () => import("./cli/service-accounts.js").then((m) => m.serviceAccountCommands);
const simulator = () => import("./cli/simulator.js").then((m) => m.simulatorCommands);
const sip = () => import("./cli/sip.js").then((m) => m.sipCommands);

/** The command groups, each loaded (with its generated code) only when named. */
export const groups: readonly Group[] = [
  { name: "projects", summary: "projects: create, list, get, delete", load: admin },
  { name: "keys", summary: "API keys and their bindings to projects", load: admin },
  {
    name: "service-accounts",
    summary:
      "service accounts, their bindings and keys; access tokens with a key file (the SDKs' OAuth flow)",
    load: serviceAccounts,
  },
  { name: "signing-key", summary: "a project's webhook signing key: get, rotate", load: admin },
  { name: "inventory", summary: "the number inventory: add blocks, search", load: numbering },
  {
    name: "numbers",
    summary: "a project's phone numbers: list, get, provision a range, port-in, suspend, resume",
    load: numbering,
  },
  { name: "listings", summary: "a project's regulatory listings: list, get, review", load: numbering },
  {
    name: "sip-domains",
    summary: "SIP domains: list, get, domain-optional mode, collaboration verification",
    load: voice,
  },
  {
    name: "sip-users",
    summary: "a SIP domain's users (digest credentials): list, get, create, update, delete",
    load: sip,
  },
  { name: "trunks", summary: "carrier trunks: list, get, create, update, delete", load: sip },
  { name: "calls", summary: "a project's calls: list, get", load: voice },
  {
    name: "recordings",
    summary: "a project's call recordings: list, get; migrate-blobs (audio into the S3 bucket)",
    load: voice,
  },
  { name: "messages", summary: "a project's messages: list, get", load: voice },
  {
    name: "simulator",
    summary: "the carrier simulator: routes, incoming calls and messages",
    load: simulator,
  },
  {
    name: "webhooks",
    summary: "a project's webhook deliveries and call-control exchanges: list, get, redeliver",
    load: simulator,
  },
];

/**
 * Runs one command, writing its output (or help) through `out`. Throws
 * UsageError for bad usage and ConnectError for the server's errors.
 */
export async function runCli(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  out: (text: string) => void = (text) => process.stdout.write(`${text}\n`),
): Promise<void> {
  await dispatch(groups, argv, { env, out });
}

/** `NOT_FOUND` from `NotFound`: the canonical name of a google.rpc.Code. */
function canonical(name: string | undefined): string {
  return (name ?? "UNKNOWN").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, "; ").trim();
}

/**
 * The single stderr line for an error, and the exit code: 2 for usage, 1
 * otherwise. (@connectrpc/connect is loaded here, not up front: help and
 * usage errors never need it.)
 */
export async function describeError(err: unknown, url?: string): Promise<{ line: string; code: number }> {
  if (err instanceof UsageError) {
    const help =
      err.command === undefined ? "" : ` (see 'switchboard ${err.command}${err.command ? " " : ""}--help')`;
    return { line: `error: ${oneLine(err.message)}${help}`, code: 2 };
  }
  const { Code, ConnectError } = await import("@connectrpc/connect");
  if (err instanceof ConnectError) {
    const hint =
      err.code === Code.Unavailable
        ? ` (is the server running${url ? ` at ${url}` : ""}? see --url)`
        : err.code === Code.Unauthenticated
          ? " (check --token)"
          : "";
    return { line: `error: ${canonical(Code[err.code])}: ${oneLine(err.rawMessage)}${hint}`, code: 1 };
  }
  return { line: `error: ${oneLine(err instanceof Error ? err.message : String(err))}`, code: 1 };
}

export interface MainIo {
  env?: NodeJS.ProcessEnv;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
}

/** Runs the CLI and returns its exit code: 0 done, 1 the server or network failed, 2 bad usage. */
export async function main(
  argv: readonly string[] = process.argv.slice(2),
  io: MainIo = {},
): Promise<number> {
  const env = io.env ?? process.env;
  if (!io.stdout) {
    // `switchboard calls list acme | head`: a reader that stops early is not an error.
    process.stdout.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code !== "EPIPE") throw err;
      process.exit(0);
    });
  }
  const stdout = io.stdout ?? ((text) => process.stdout.write(`${text}\n`));
  const stderr = io.stderr ?? ((text) => process.stderr.write(`${text}\n`));
  const cli: CliIo = { env, out: stdout };
  try {
    await dispatch(groups, argv, cli);
    return cli.exitCode ?? 0;
  } catch (err) {
    if (err instanceof NoCommandError) {
      stderr(err.message);
      return 2;
    }
    const { line, code } = await describeError(err, cli.url);
    stderr(line);
    return code;
  }
}
