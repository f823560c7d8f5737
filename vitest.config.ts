import { defineConfig } from "vitest/config";

// .ci/run sets SWITCHBOARD_TEST_REPORT to have each run's results as JSON
// while it runs the README's command (`npm test`) exactly as written.
const report = process.env.SWITCHBOARD_TEST_REPORT;
// `npm run test:interop` runs the suites against real third-party software
// (SIPp, ...) instead: test/interop/*.interop.ts, never part of `npm test`.
const interop = process.env.SWITCHBOARD_INTEROP === "1";

export default defineConfig({
  test: {
    include: interop ? ["test/interop/**/*.interop.ts"] : ["test/**/*.test.ts"],
    ...(report ? { reporters: ["default", "json"], outputFile: { json: report } } : {}),
    pool: "forks",
    // Workers run file after file in one process, so what a worker sets up
    // once survives between files: test/support/db.ts keeps one migrated
    // PGlite template per worker and clones it per file (a fresh PGlite
    // takes seconds). Test files must not rely on module-level isolation.
    isolate: false,
    // Real servers and databases: allow for a slow shared machine, never for a hang.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
});
