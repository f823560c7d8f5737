/**
 * From argv to output: finds the command named by the leading words, parses
 * its options with `node:util` parseArgs (strict), prints help, connects and
 * runs it.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";
import type { Command, Group, OptionSpec, Values } from "./command.js";
import { UsageError } from "./command.js";

/** The default of --url. */
export const DEFAULT_URL = "http://127.0.0.1:8080";

export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  url: {
    type: "string",
    value: "URL",
    description: `the server (default $SWITCHBOARD_URL, else ${DEFAULT_URL})`,
  },
  token: {
    type: "string",
    value: "TOKEN",
    description: "the operator token (default $SWITCHBOARD_OPERATOR_TOKEN, else $DATA_DIR/operator-token)",
  },
  json: { type: "boolean", description: "print the response as proto3 JSON" },
  help: { type: "boolean", short: "h", description: "show help" },
};

/** Thrown for `switchboard` with no command: the whole usage goes to stderr. */
export class NoCommandError extends UsageError {}

function optionUsage(name: string, spec: OptionSpec): string {
  const short = spec.short ? `-${spec.short}, ` : "";
  const value = spec.type === "string" ? ` ${spec.value ?? "VALUE"}` : "";
  return `${short}--${name}${value}${spec.multiple ? " ..." : ""}`;
}

function optionLines(options: Record<string, OptionSpec>): string[] {
  const entries = Object.entries(options).map(([n, s]) => [optionUsage(n, s), s.description] as const);
  const width = Math.max(...entries.map(([u]) => u.length));
  return entries.map(([u, d]) => `  ${u.padEnd(width)}  ${d}`);
}

function synopsis(c: Command): string {
  return ["switchboard", ...c.path, ...(c.args ?? []), ...(c.options ? ["[options]"] : [])].join(" ");
}

function commandList(commands: readonly Command[], prefixLength: number): string[] {
  const rows = commands.map((c) => [[...c.path.slice(prefixLength), ...(c.args ?? [])].join(" "), c.summary]);
  const width = Math.max(...rows.map(([u]) => u!.length));
  return rows.map(([u, s]) => `  ${u!.padEnd(width)}  ${s}`);
}

/** Help for the words `prefix` (empty: the whole CLI). */
export function groupHelp(commands: readonly Command[], prefix: readonly string[]): string {
  const under = commands.filter((c) => prefix.every((w, i) => c.path[i] === w));
  const head = ["switchboard", ...prefix].join(" ");
  return [
    `usage: ${head} <command> [arguments] [options]`,
    "",
    "Commands:",
    ...commandList(under, prefix.length),
    "",
    "Global options:",
    ...optionLines(GLOBAL_OPTIONS),
    "",
    `Run '${head} <command> --help' for a command's arguments and options.`,
  ].join("\n");
}

export function commandHelp(c: Command): string {
  const lines = [`usage: ${synopsis(c)}`, "", c.summary];
  if (c.description) lines.push("", c.description);
  if (c.options) lines.push("", "Options:", ...optionLines(c.options));
  lines.push("", "Global options:", ...optionLines(GLOBAL_OPTIONS));
  if (c.examples?.length) lines.push("", "Examples:", ...c.examples.map((e) => `  ${e}`));
  return lines.join("\n");
}

interface Resolved {
  command: Command | undefined;
  /** The command words found (a group's when `command` is undefined). */
  words: string[];
  /** argv without those words. */
  rest: string[];
}

/** Finds the command named by the leading words of argv (options before or among them skipped). */
export function resolve(commands: readonly Command[], argv: readonly string[]): Resolved {
  const words: string[] = [];
  const rest: string[] = [];
  let command: Command | undefined;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (command || token === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    if (token.startsWith("-")) {
      rest.push(token);
      const name = token.replace(/^--?/, "");
      if (!token.includes("=") && GLOBAL_OPTIONS[name]?.type === "string" && i + 1 < argv.length) {
        rest.push(argv[++i]!);
      }
      continue;
    }
    const next = [...words, token];
    const matches = commands.filter((c) => next.every((w, j) => c.path[j] === w));
    if (matches.length === 0) {
      const known = words.length === 0 ? "command" : `command for '${words.join(" ")}'`;
      throw new UsageError(`unknown ${known}: ${token}`, words.join(" "));
    }
    words.push(token);
    command = matches.find((c) => c.path.length === next.length);
  }
  return { command, words, rest };
}

export interface CliIo {
  env: NodeJS.ProcessEnv;
  out(text: string): void;
  /** Set to the server's URL once a command is about to call it (for error hints). */
  url?: string;
  /** Set by a command run here (runLocal) that ended with an exit code other than 0. */
  exitCode?: number;
}

/** Help for the whole CLI: the groups. */
export function topHelp(groups: readonly Group[]): string {
  const width = Math.max(...groups.map((g) => g.name.length));
  return [
    "usage: switchboard <group> <command> [arguments] [options]",
    "",
    "Groups:",
    ...groups.map((g) => `  ${g.name.padEnd(width)}  ${g.summary}`),
    "",
    "Global options:",
    ...optionLines(GLOBAL_OPTIONS),
    "",
    "Run 'switchboard <group> --help' for its commands, 'switchboard <group> <command> --help'",
    "for a command's arguments and options. Exit codes: 0 done, 1 the server or network",
    "failed, 2 bad usage.",
  ].join("\n");
}

/** The first word of argv that is not an option (or an option's value). */
function firstWord(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") return argv[i + 1];
    if (!token.startsWith("-")) return token;
    if (!token.includes("=") && GLOBAL_OPTIONS[token.replace(/^--?/, "")]?.type === "string") i++;
  }
  return undefined;
}

export async function dispatch(groups: readonly Group[], argv: readonly string[], io: CliIo): Promise<void> {
  const wantsHelp = argv.some((t) => t === "--help" || t === "-h");
  const word = firstWord(argv);
  if (word === undefined) {
    if (wantsHelp) return io.out(topHelp(groups));
    if (argv.length === 0) throw new NoCommandError(topHelp(groups));
    // Options only: check them, then say a command is missing.
    parseOptions(GLOBAL_OPTIONS, [...argv], "");
    throw new UsageError("missing command", "");
  }
  const group = groups.find((g) => g.name === word);
  if (!group) throw new UsageError(`unknown command: ${word}`, "");
  // Only the named group's commands are loaded (with their generated code).
  const commands = await group.load();
  const { command, words, rest } = resolve(commands, argv);
  if (!command) {
    if (wantsHelp) return io.out(groupHelp(commands, words));
    throw new UsageError(`missing command after '${words.join(" ")}'`, words.join(" "));
  }
  const name = command.path.join(" ");
  if (wantsHelp) return io.out(commandHelp(command));
  const { values, positionals } = parseOptions({ ...GLOBAL_OPTIONS, ...command.options }, rest, name);
  const specs = command.args ?? [];
  const required = specs.filter((a) => a.startsWith("<")).length;
  if (positionals.length < required) {
    throw new UsageError(`missing argument ${specs[positionals.length]}`, name);
  }
  if (positionals.length > specs.length) {
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[specs.length])}`, name);
  }
  if (command.runLocal !== undefined) {
    io.exitCode = await command.runLocal({ args: positionals, values, env: io.env, out: io.out });
    return;
  }
  if (command.run === undefined) throw new Error(`${name} has nothing to run`);
  const url = (values.url as string | undefined) ?? io.env.SWITCHBOARD_URL ?? DEFAULT_URL;
  io.url = url;
  // Loaded only to run a command: help never pays for connect-node.
  const { connect, operatorToken } = await import("./client.js");
  const client = connect(url, () => operatorToken(values.token as string | undefined, io.env));
  const output = await command.run({ args: positionals, values, client });
  const { render } = await import("./output.js");
  io.out(render(output, values.json === true));
}

function parseOptions(
  options: Record<string, OptionSpec>,
  args: string[],
  command: string,
): { values: Values; positionals: string[] } {
  const config: ParseArgsConfig["options"] = {};
  for (const [n, s] of Object.entries(options)) {
    config[n] = {
      type: s.type,
      ...(s.multiple ? { multiple: true } : {}),
      ...(s.short ? { short: s.short } : {}),
    };
  }
  try {
    const parsed = parseArgs({ args, options: config, allowPositionals: true, strict: true });
    return { values: parsed.values as Values, positionals: parsed.positionals };
  } catch (err) {
    // parseArgs' messages run on with advice about '--'; keep their first sentence.
    const message = err instanceof Error ? err.message.split(". ")[0]!.replace(/\.$/, "") : String(err);
    throw new UsageError(message, command);
  }
}
