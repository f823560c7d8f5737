import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { backendIndependentTestFiles } from "./test/support/backend-files.js";

// .ci/run sets SWITCHBOARD_TEST_REPORT to have each run's results as JSON
// while it runs the README's command (`npm test`) exactly as written.
const report = process.env.SWITCHBOARD_TEST_REPORT;
// `npm run test:interop` runs the suites against real third-party software
// (SIPp, ...) instead: test/interop/*.interop.ts, never part of `npm test`.
const interop = process.env.SWITCHBOARD_INTEROP === "1";

// The files whose tests listen to audio on a real clock: RTP paced at 20 ms
// through a jitter buffer, with the test's phone in the server's process
// (test/sip-carrier/phone.ts) or a WebSocket of media frames. A stalled event
// loop lets a jitter buffer run dry, and it then plays silence by design, so
// these run last, one file at a time, with the machine to themselves.
const realTime = [
  "test/sip-carrier/**",
  "test/sip-trunks/**",
  "test/rtp/**",
  "test/streams/**",
  "test/media/**",
];

// CI's PostgreSQL run (.ci/run: TEST_BACKENDS=postgres, after the plain run on
// the embedded database) runs again only the files that reach a database
// TEST_DATABASE_URL chooses (test/support/backend-files.ts): the others would
// run the very same code twice.
const ranAlready =
  process.env.TEST_BACKENDS === "postgres" && !interop
    ? backendIndependentTestFiles(import.meta.dirname)
    : [];
// Said once (vitest reads this file again for each project), on stderr: stdout
// may be a report (`vitest list --json`).
const said = Symbol.for("switchboard.vitest.ranAlreadySaid");
if (ranAlready.length > 0 && !(globalThis as { [said]?: boolean })[said]) {
  (globalThis as { [said]?: boolean })[said] = true;
  process.stderr.write(
    `TEST_BACKENDS=postgres: ${ranAlready.length} test files that reach no database TEST_DATABASE_URL chooses are left out (npm test without TEST_BACKENDS runs them)\n`,
  );
}

export default defineConfig({
  test: {
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
    projects: interop
      ? [{ extends: true, test: { name: "interop", include: ["test/interop/**/*.interop.ts"] } }]
      : [
          {
            extends: true,
            test: {
              name: "service",
              include: ["test/**/*.test.ts"],
              exclude: [...realTime, ...ranAlready],
              // At least two workers, even on two cores (vitest's default there
              // is one): these tests mostly wait on sockets, databases and
              // timers, and one worker kept ~58% of a core busy in CI. Ports,
              // databases and the build are per worker or locked (test/support/).
              maxWorkers: Math.max(2, availableParallelism() - 1),
              sequence: { groupOrder: 0 },
            },
          },
          {
            extends: true,
            test: {
              name: "real-time",
              include: realTime.map((glob) => `${glob}/*.test.ts`),
              exclude: ranAlready,
              maxWorkers: 1,
              sequence: { groupOrder: 1 },
            },
          },
        ],
  },
});
