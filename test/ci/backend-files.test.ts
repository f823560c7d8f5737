/**
 * test/support/backend-files.ts: which test files CI's PostgreSQL run runs
 * again (vitest.config.ts). A file wrongly found backend-independent would
 * silently never run on PostgreSQL, so each way of choosing a backend is
 * checked on a tree of its own, and the rule against the suite itself.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { backendIndependentTestFiles } from "../support/backend-files.js";

const ROOT = join(import.meta.dirname, "..", "..");

describe("backendIndependentTestFiles", () => {
  const root = mkdtempSync(join(tmpdir(), "backend-files-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  // db.ts defines the choosers: importing it chooses nothing by itself.
  write(
    "test/support/db.ts",
    "export function testDatabases() {}\nexport const pglite = {};\nprocess.env.TEST_DATABASE_URL;\n",
  );
  write(
    "test/support/harness.ts",
    'import { x } from "./cycle.js";\nexport const h = () => describePostgres("x", () => {});\n',
  );
  write("test/support/cycle.ts", 'import { h } from "./cycle-back.js";\nexport const x = 1;\n');
  write("test/support/cycle-back.ts", 'import { x } from "./cycle.js";\nexport const h = 2;\n');
  write("test/support/plain.ts", 'import { x } from "./cycle.js";\nexport const p = 3;\n');
  write(
    "test/a/each.test.ts",
    'import { testDatabases } from "../support/db.js";\ndescribe.each(testDatabases())("x", () => {});\n',
  );
  write("test/a/only-postgres.test.ts", "const b = postgresTestBackend();\n");
  write("test/a/embedded.test.ts", 'describeEmbedded("first start", () => {});\n');
  write("test/a/env.test.ts", "const url = process.env.TEST_DATABASE_URL;\n");
  write("test/b/through-helper.test.ts", 'import { h } from "../support/harness.js";\n');
  write("test/b/dynamic-helper.test.ts", 'const { h } = await import("../support/harness.js");\n');
  write("test/b/pglite-only.test.ts", 'import { pglite, useTestDatabase } from "../support/db.js";\n');
  write("test/b/cycle.test.ts", 'import { p } from "../support/plain.js";\n');
  write("test/b/nothing.test.ts", 'import { expect } from "vitest";\n');
  write("test/b/not-a-test.ts", "export const y = testDatabases();\n");

  it("finds the files that choose no backend, however they get there", () => {
    expect(backendIndependentTestFiles(root)).toEqual([
      "test/b/cycle.test.ts",
      "test/b/nothing.test.ts",
      "test/b/pglite-only.test.ts",
    ]);
  });

  it("on this suite: no file that names a chooser itself is left out of the PostgreSQL run", () => {
    const independent = backendIndependentTestFiles(ROOT);
    expect(independent.length).toBeGreaterThan(0);
    for (const file of independent) {
      expect(readFileSync(join(ROOT, file), "utf8"), file).not.toMatch(
        /testDatabases\(|postgresTestBackend\(|describePostgres\(|TEST_DATABASE_URL/,
      );
    }
    // The end-to-end call tests run on every backend; RTP's packet codec touches no database.
    expect(independent).not.toContain("test/voice/calls.test.ts");
    expect(independent).toContain("test/rtp/packet.test.ts");
  });
});
