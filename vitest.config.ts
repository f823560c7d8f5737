import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
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
