/**
 * Rendering: proto3 JSON for --json; otherwise tables for lists and
 * `key: value` lines for single resources, both read from the message's
 * proto3 JSON (enum names, RFC 3339 times), nested fields dotted.
 */
import { type DescMessage, type MessageShape, toJson, toJsonString } from "@bufbuild/protobuf";
import type { Output } from "./command.js";

/** A table column: its header and how to read its cell from an item's proto3 JSON. */
export interface Column {
  header: string;
  value(item: Json): unknown;
}

// biome-ignore lint/suspicious/noExplicitAny: proto3 JSON of any message
export type Json = Record<string, any>;

/** A column reading a dotted proto3 JSON path (`phoneNumber.phoneNumber`). */
export function col(header: string, path: string): Column {
  const keys = path.split(".");
  return {
    header,
    value: (item) => keys.reduce<unknown>((v, k) => (v as Json | undefined)?.[k], item),
  };
}

/** A column showing the last segment of a resource name (`projects/p/calls/abc` -> `abc`). */
export function idCol(header = "ID", path = "name"): Column {
  const inner = col(header, path);
  return { header, value: (item) => String(inner.value(item) ?? "").replace(/^.*\//, "") };
}

/** Proto3 JSON with every field present (defaults included), for human output. */
export function fullJson(schema: DescMessage, message: MessageShape<DescMessage>): Json {
  return toJson(schema, message, { alwaysEmitImplicit: true }) as Json;
}

function cell(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (Array.isArray(v)) return v.map(cell).join(",");
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

export function table(items: readonly Json[], columns: readonly Column[]): string {
  const rows = [
    columns.map((c) => c.header),
    ...items.map((item) => columns.map((c) => cell(c.value(item)))),
  ];
  const widths = columns.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((v, i) => (i === r.length - 1 ? v : v.padEnd(widths[i]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** `key: value` lines; nested objects dotted, arrays of objects indexed; empty values left out. */
export function fields(json: Json): string {
  const lines: [string, string][] = [];
  const walk = (prefix: string, v: unknown): void => {
    if (v === undefined || v === null || v === "") return;
    if (Array.isArray(v)) {
      if (v.length === 0) return;
      if (v.every((x) => typeof x !== "object" || x === null)) lines.push([prefix, v.join(", ")]);
      else for (const [i, x] of v.entries()) walk(`${prefix}[${i}]`, x);
      return;
    }
    if (typeof v === "object") {
      for (const [k, x] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, x);
      return;
    }
    lines.push([prefix, String(v)]);
  };
  walk("", json);
  const width = Math.max(0, ...lines.map(([k]) => k.length));
  return lines.map(([k, v]) => `${`${k}:`.padEnd(width + 2)}${v}`).join("\n");
}

/** The text to print for `output`. */
export function render(output: Output, json: boolean): string {
  if (json) return toJsonString(output.schema, output.message, { prettySpaces: 2 });
  switch (output.kind) {
    case "resource":
      return fields(fullJson(output.schema, output.message));
    case "done":
      return output.text;
    case "list": {
      const text = table(output.items as Json[], output.columns);
      return output.nextPageToken ? `${text}\n\nmore: --page-token ${output.nextPageToken}` : text;
    }
  }
}
