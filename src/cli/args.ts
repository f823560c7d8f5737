/**
 * Reading command arguments: resource names from ids, integers, enums and
 * the paging options every list command shares.
 */
import { create, type DescEnum, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { type OptionSpec, type Output, UsageError, type Values } from "./command.js";
import { type Column, fullJson } from "./output.js";

/** `p` or `projects/p` -> `projects/p`. */
export function projectName(arg: string): string {
  return arg.startsWith("projects/") ? arg : `projects/${arg}`;
}

/**
 * A project's child: a full name (`projects/p/calls/c`), or an id with
 * `--project p`.
 */
export function childName(arg: string, collection: string, values: Values): string {
  if (arg.startsWith("projects/")) {
    if (!new RegExp(`^projects/[^/]+/${collection}/[^/]+$`).test(arg)) {
      throw new UsageError(`expected projects/<project>/${collection}/<id>, got ${JSON.stringify(arg)}`);
    }
    return arg;
  }
  const project = values.project;
  if (typeof project !== "string" || !project) {
    throw new UsageError(`give the full name projects/<project>/${collection}/${arg}, or --project`);
  }
  return `${projectName(project)}/${collection}/${arg}`;
}

/** The `--project` option of commands taking a child's id. */
export const PROJECT_OPTION: Record<string, OptionSpec> = {
  project: {
    type: "string",
    value: "PROJECT",
    description: "the project, when the name given is only an id",
  },
};

export function str(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === "string" ? v : undefined;
}

export function strs(values: Values, name: string): string[] {
  const v = values[name];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

export function flag(values: Values, name: string): boolean {
  return values[name] === true;
}

/** A whole number option within [min, max]; undefined when not given. */
export function int(values: Values, name: string, min: number, max: number): number | undefined {
  const v = str(values, name);
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`);
  }
  return Number(v);
}

/** `true` / `false` (also yes/no, 1/0); undefined when not given. */
export function bool(values: Values, name: string): boolean | undefined {
  const v = str(values, name)?.toLowerCase();
  if (v === undefined) return undefined;
  if (["true", "yes", "1"].includes(v)) return true;
  if (["false", "no", "0"].includes(v)) return false;
  throw new UsageError(`--${name} must be true or false, got ${JSON.stringify(v)}`);
}

/** An enum value by name (case-insensitive, with or without the enum's prefix); 0 is refused. */
export function enumValue(desc: DescEnum, name: string, option: string): number {
  const want = name.toUpperCase().replace(/-/g, "_");
  const value = desc.values.find(
    (v) => v.number !== 0 && (v.name === want || v.name === `${desc.sharedPrefix ?? ""}${want}`),
  );
  if (!value) throw new UsageError(`${option} must be one of ${enumNames(desc).join(", ")}, got ${name}`);
  return value.number;
}

/** The names of an enum's values, without the unspecified one. */
export function enumNames(desc: DescEnum): string[] {
  return desc.values.filter((v) => v.number !== 0).map((v) => v.name);
}

export const LIST_OPTIONS: Record<string, OptionSpec> = {
  limit: { type: "string", value: "N", description: "print at most N items (default: every page)" },
  "page-size": { type: "string", value: "N", description: "items per request, 1 to 100 (default 100)" },
  "page-token": {
    type: "string",
    value: "TOKEN",
    description: "start from this page (as printed after 'more:')",
  },
};

interface Page {
  nextPageToken: string;
}

/**
 * Reads pages until the last one or `--limit` items, asking each time for
 * no more than the limit left so that the last page token resumes exactly
 * where the output stopped. Returns the merged response.
 */
export async function listPages<D extends DescMessage>(
  schema: D,
  field: string,
  values: Values,
  fetch: (pageSize: number, pageToken: string) => Promise<MessageShape<D> & Page>,
  columns: readonly Column[],
): Promise<Output> {
  const limit = int(values, "limit", 1, Number.MAX_SAFE_INTEGER);
  const pageSize = int(values, "page-size", 1, 100) ?? 100;
  const items: unknown[] = [];
  let pageToken = str(values, "page-token") ?? "";
  do {
    const want = limit === undefined ? pageSize : Math.min(pageSize, limit - items.length);
    const page = await fetch(want, pageToken);
    items.push(...((page as unknown as Record<string, unknown[]>)[field] ?? []));
    pageToken = page.nextPageToken;
  } while (pageToken && (limit === undefined || items.length < limit));
  const message = create(schema, { [field]: items, nextPageToken: pageToken } as never);
  const jsonName = schema.field[field]?.jsonName ?? field;
  return {
    kind: "list",
    schema,
    message,
    items: (fullJson(schema, message)[jsonName] as unknown[] | undefined) ?? [],
    columns,
    nextPageToken: pageToken,
  };
}

/** A single resource. */
export function resource<D extends DescMessage>(schema: D, message: MessageShape<D>): Output {
  return { kind: "resource", schema, message };
}

/** An action's result: its message with --json, `text` otherwise. */
export function done<D extends DescMessage>(schema: D, message: MessageShape<D>, text: string): Output {
  return { kind: "done", schema, message, text };
}
