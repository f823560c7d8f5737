/**
 * Preloaded into `npm run bench`'s targets (`--import ./bench/gc-meter.mjs`;
 * plain JavaScript, so the compiled server loads it without tsx): keeps the
 * main thread's garbage-collection pauses (milliseconds) from a perf_hooks
 * observer, and answers each line `gc <seq>` on stdin by writing
 * `{"seq":<seq>,"ms":..}` to BENCH_GC_METER_FILE. The bench reads
 * it around each measured run (bench/children.ts, Child.gcTotals). Without
 * BENCH_GC_METER_FILE it does nothing. The observer is called once per
 * collection; nothing here runs per request.
 */
import { writeFileSync } from "node:fs";
import { PerformanceObserver } from "node:perf_hooks";
import { isMainThread } from "node:worker_threads";

const file = process.env.BENCH_GC_METER_FILE;

if (isMainThread && file) {
  let ms = 0;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) ms += entry.duration;
  }).observe({ entryTypes: ["gc"] });
  let pending = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => {
    pending += chunk;
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
      const m = /^gc (\d+)$/.exec(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
      if (m) writeFileSync(file, JSON.stringify({ seq: Number(m[1]), ms }));
    }
  });
}
