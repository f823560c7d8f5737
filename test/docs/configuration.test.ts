/**
 * docs/configuration.md lists every environment variable the service reads
 * (src/, the CLI aside: its variables are in docs/cli.md), and nothing it
 * does not read.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");

/** Names the service reads: `env.NAME` and the string keys given to config.ts's readers. */
function readVariables(): Set<string> {
  const files = (readdirSync(join(ROOT, "src"), { recursive: true }) as string[]).filter(
    (f) => f.endsWith(".ts") && !f.startsWith("cli"),
  );
  const names = new Set<string>();
  for (const f of files) {
    const source = readFileSync(join(ROOT, "src", f), "utf8");
    for (const m of source.matchAll(/env\.([A-Z][A-Z0-9_]+)/g)) names.add(m[1]!);
    for (const m of source.matchAll(/\(\s*env,\s*"([A-Z][A-Z0-9_]+)"/g)) names.add(m[1]!);
  }
  return names;
}

/** Names in the first column of docs/configuration.md's tables. */
function documentedVariables(): Set<string> {
  const doc = readFileSync(join(ROOT, "docs/configuration.md"), "utf8");
  const names = new Set<string>();
  for (const line of doc.split("\n")) {
    const first = /^\|\s*([^|]+?)\s*\|/.exec(line)?.[1] ?? "";
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(m[1]!);
  }
  return names;
}

describe("docs/configuration.md", () => {
  it("documents every variable the service reads, and only those", () => {
    const read = readVariables();
    expect(read.size).toBeGreaterThan(20);
    const documented = documentedVariables();
    // A reader may take a stem and add suffixes (rateLimit(env, "RATE_LIMIT_PROJECT") reads
    // RATE_LIMIT_PROJECT_PER_SECOND and _BURST): a stem counts for the names it starts.
    const covers = (stem: string, name: string) => name === stem || name.startsWith(`${stem}_`);
    expect([...read].filter((r) => ![...documented].some((d) => covers(r, d))).sort()).toEqual([]);
    expect([...documented].filter((d) => ![...read].some((r) => covers(r, d))).sort()).toEqual([]);
  });
});
