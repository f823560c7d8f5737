/**
 * The CLI's command model: each command declares its words, arguments and
 * options (for `node:util` parseArgs and for its --help), and a `run` that
 * returns what to print. Parsing, help and dispatch live in `dispatch.ts`.
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { Client } from "./client.js";
import type { Column } from "./output.js";

export class UsageError extends Error {
  /** The command whose usage to point at in the error line (`switchboard keys create --help`). */
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}

export interface OptionSpec {
  type: "string" | "boolean";
  multiple?: boolean;
  short?: string;
  /** Placeholder in help, e.g. `ID`. */
  value?: string;
  description: string;
}

/** What a command prints: proto3 JSON with --json, a table or key/value lines otherwise. */
export type Output =
  | { kind: "resource"; schema: DescMessage; message: MessageShape<DescMessage> }
  | {
      kind: "list";
      schema: DescMessage;
      message: MessageShape<DescMessage>;
      /** The items of `message`, as proto3 JSON objects. */
      items: readonly unknown[];
      columns: readonly Column[];
      nextPageToken: string;
    }
  | { kind: "done"; schema: DescMessage; message: MessageShape<DescMessage>; text: string };

export interface Values {
  [name: string]: string | boolean | string[] | boolean[] | undefined;
}

export interface Invocation {
  /** Positional arguments after the command words. */
  args: string[];
  values: Values;
  client: Client;
}

export interface Command {
  /** The words naming it: `["keys", "create"]`. */
  path: readonly string[];
  summary: string;
  /** Positional arguments for help: `<project>`, `[<call>]`. */
  args?: readonly string[];
  options?: Readonly<Record<string, OptionSpec>>;
  /** Longer help text, shown after the usage line. */
  description?: string;
  examples?: readonly string[];
  /** Runs it against the server (`client`), returning what to print. */
  run?(inv: Invocation): Promise<Output>;
  /**
   * Or runs it here, on the service's own settings (the environment a
   * replica runs with), printing as it goes; no server is called. Returns the
   * exit code.
   */
  runLocal?(inv: LocalInvocation): Promise<number>;
}

export interface LocalInvocation {
  args: string[];
  values: Values;
  env: NodeJS.ProcessEnv;
  out(text: string): void;
}

/** A group of commands (their first word), loaded only when named. */
export interface Group {
  name: string;
  summary: string;
  load(): Promise<readonly Command[]>;
}
