/**
 * `switchboard` — the operator's command line. Talks to a running server
 * through the admin API and the public API (Connect protocol) with the
 * operator token. `switchboard --help` lists the commands; docs/cli.md
 * shows each with an example.
 *
 * Imports only generated clients, @bufbuild/protobuf and connect-node (no
 * server code), so that it starts fast. The commands live in src/cli/, one
 * file per area.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { adminCommands } from "./cli/admin.js";
import { type Command, UsageError } from "./cli/command.js";
import { type CliIo, dispatch, NoCommandError } from "./cli/dispatch.js";
import { numberingCommands } from "./cli/numbering.js";
import { simulatorCommands } from "./cli/simulator.js";
import { voiceCommands } from "./cli/voice.js";

export { UsageError } from "./cli/command.js";

export const commands: readonly Command[] = [
  ...adminCommands,
  ...numberingCommands,
  ...voiceCommands,
  ...simulatorCommands,
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
  await dispatch(commands, argv, { env, out });
}

/** `NOT_FOUND` from Code.NotFound: the canonical name of google.rpc.Code. */
export function codeName(code: Code): string {
  return (Code[code] ?? "UNKNOWN").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, "; ").trim();
}

/** The single stderr line for an error, and the exit code: 2 for usage, 1 otherwise. */
export function describeError(err: unknown, url?: string): { line: string; code: number } {
  if (err instanceof UsageError) {
    const help =
      err.command === undefined ? "" : ` (see 'switchboard ${err.command}${err.command ? " " : ""}--help')`;
    return { line: `error: ${oneLine(err.message)}${help}`, code: 2 };
  }
  if (err instanceof ConnectError) {
    const hint =
      err.code === Code.Unavailable
        ? ` (is the server running${url ? ` at ${url}` : ""}? see --url)`
        : err.code === Code.Unauthenticated
          ? " (check --token)"
          : "";
    return { line: `error: ${codeName(err.code)}: ${oneLine(err.rawMessage)}${hint}`, code: 1 };
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
  const stdout = io.stdout ?? ((text) => process.stdout.write(`${text}\n`));
  const stderr = io.stderr ?? ((text) => process.stderr.write(`${text}\n`));
  const cli: CliIo = { env, out: stdout };
  try {
    await dispatch(commands, argv, cli);
    return 0;
  } catch (err) {
    if (err instanceof NoCommandError) {
      stderr(err.message);
      return 2;
    }
    const { line, code } = describeError(err, cli.url);
    stderr(line);
    return code;
  }
}
