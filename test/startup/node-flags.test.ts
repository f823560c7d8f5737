/**
 * The server's node flags (docs/performance.md, "A young generation of
 * 8 MB"): npm start's command line (package.json) and the image's
 * ENTRYPOINT (Dockerfile) give node the same ones, node takes them without
 * a word, and they do what they say (the young generation's size).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { serverNodeFlags } from "../../bench/children.js";

const root = new URL("../../", import.meta.url);

describe("the server's node flags", () => {
  it("are the same for npm start and the image", () => {
    const flags = serverNodeFlags();
    expect(flags).toContain("--max-semi-space-size=8");
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(new URL("Dockerfile", root), "utf8"));
    expect(entrypoint).not.toBeNull();
    expect(JSON.parse(entrypoint![1]!)).toEqual(["node", ...flags, "dist/server.js"]);
  });

  it("are taken by node and bound the young generation", () => {
    const measure = (flags: string[]) => {
      const run = spawnSync(
        process.execPath,
        [
          ...flags,
          "-e",
          // Allocate enough short-lived garbage for the young generation to grow to its bound.
          "let k = []; for (let i = 0; i < 3e6; i++) { k.push({ i }); if (k.length > 2e5) k = []; } " +
            "const s = require('node:v8').getHeapSpaceStatistics().find((x) => x.space_name === 'new_space'); " +
            "console.log(s.space_size)",
        ],
        { encoding: "utf8" },
      );
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).toBe("");
      return Number(run.stdout.trim());
    };
    const bounded = measure(serverNodeFlags());
    // Two semi-spaces of at most 8 MB each.
    expect(bounded).toBeGreaterThan(0);
    expect(bounded).toBeLessThanOrEqual(16 * 1024 * 1024);
    expect(measure([])).toBeGreaterThan(bounded);
  });
});
