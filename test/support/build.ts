/**
 * `npm run build` for tests that run the compiled service: once per source
 * change (`--if-stale`), and never two at a time (test files run in
 * parallel workers; the build replaces dist/ as a whole), serialised by a
 * lock directory.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";

export const ROOT = join(import.meta.dirname, "../..");
const LOCK = join(ROOT, ".build-lock");

export async function ensureBuilt(): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      // Held by another worker; a lock older than 10 minutes was left by a killed run.
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > 600_000) rmSync(LOCK, { recursive: true, force: true });
      } catch {}
      if (Date.now() > deadline) throw new Error("timed out waiting for another test's build");
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    execFileSync(process.execPath, ["scripts/build.mjs", "--if-stale"], { cwd: ROOT, stdio: "pipe" });
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
