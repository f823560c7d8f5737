/**
 * Preloaded into every child process of the benchmark (plain JavaScript, so the
 * compiled server can load it without tsx: `node [--import tsx]
 * --import ./bench/parent-guard.mjs ...`): when the runner goes away, even
 * by SIGKILL, the pipe on the child's stdin closes and the child stops
 * itself (SIGTERM first so the server shuts down cleanly, then a hard exit).
 * Nothing here touches the request path.
 *
 * Preloads run in worker threads too (they inherit the process's flags):
 * there stdin is an empty stream that ends at once, so the guard watches the
 * pipe from the main thread only (else the embedded database's thread would
 * stop the server as soon as it started).
 */
import { isMainThread } from "node:worker_threads";

if (isMainThread) {
  process.stdin.on("error", () => {});
  process.stdin.on("close", stop);
  process.stdin.on("end", stop);
  process.stdin.resume();
  // Never the reason the child stays alive (the seeding child ends by itself).
  if ("unref" in process.stdin && typeof process.stdin.unref === "function") process.stdin.unref();
}

function stop() {
  setTimeout(() => process.exit(1), 5_000).unref();
  process.kill(process.pid, "SIGTERM");
}
