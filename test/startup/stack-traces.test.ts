/**
 * Stack traces of compiled code point at the TypeScript sources, and no
 * source map is read before a stack is formatted (src/stack-traces.ts): a
 * fixture is bundled by esbuild as dist/ is (source maps without the sources'
 * text) and run by plain node, without --enable-source-maps.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");

describe("source-mapped stack traces of the compiled service", () => {
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-stacks-"));
    // Line 4 of thrower.ts throws; the bundle moves it elsewhere.
    writeFileSync(
      join(dir, "thrower.ts"),
      [
        "// padding so the bundle's lines differ from the source's",
        "export function thrower(kind: string): never {",
        '  const why: string = "thrown: " + kind;',
        "  throw new Error(why);",
        "}",
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(dir, "entry.ts"),
      [
        `import { installSourceMappedStacks, loadedSourceMaps } from ${JSON.stringify(join(ROOT, "src/stack-traces.ts"))};`,
        'import { thrower } from "./thrower.ts";',
        "installSourceMappedStacks();",
        "const before = loadedSourceMaps();",
        "let stack = '';",
        "try { thrower('once'); } catch (err) { stack = (err as Error).stack ?? ''; }",
        "let again = '';",
        "try { thrower('twice'); } catch (err) { again = (err as Error).stack ?? ''; }",
        "console.log(JSON.stringify({ before, after: loadedSourceMaps(), stack, again }));",
      ].join("\n"),
    );
    await build({
      entryPoints: [join(dir, "entry.ts")],
      outfile: join(dir, "out", "entry.js"),
      bundle: true,
      platform: "node",
      format: "esm",
      sourcemap: true,
      sourcesContent: false,
      logLevel: "silent",
    });
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function run(): { before: number; after: number; stack: string; again: string } {
    const node = join(ROOT, "node_modules/.bin/node");
    return JSON.parse(execFileSync(node, [join(dir, "out", "entry.js")], { encoding: "utf8" }));
  }

  it("maps the frames of bundled code to the TypeScript file, line and column", () => {
    const { stack } = run();
    const lines = stack.split("\n");
    expect(lines[0]).toBe("Error: thrown: once");
    expect(lines[1]).toBe(`    at thrower (${join(dir, "thrower.ts")}:4:9)`);
    expect(lines[2]).toMatch(/entry\.ts:6:\d+\)?$/);
    expect(stack).not.toContain("out/entry.js:");
  });

  it("reads a map only when a stack is first formatted, and once", () => {
    const { before, after, again } = run();
    expect(before).toBe(0);
    expect(after).toBe(1);
    expect(again.split("\n")[1]).toBe(`    at thrower (${join(dir, "thrower.ts")}:4:9)`);
  });
});
