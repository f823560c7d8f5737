/**
 * Issue #12's item-4 targets (the call engine on PostgreSQL), checked
 * against one run of `npm run bench:calls`. Printed, never asserted.
 */
import type { ServerEngineResult } from "./calls-server.js";

export interface EngineCheck {
  target: string;
  measured: string;
  holds: boolean | undefined;
}

export function engineTargetChecks(r: ServerEngineResult | undefined): EngineCheck[] {
  if (r === undefined || r.calls === 0) {
    return [{ target: "call engine on postgres", measured: "not measured", holds: undefined }];
  }
  const allDone = r.completed === r.calls && r.undelivered === 0 && r.error === undefined;
  return [
    {
      target: "server CPU per call <= 4 ms",
      measured: `${r.serverCpuMsPerCall.toFixed(2)} ms`,
      holds: r.serverCpuMsPerCall <= 4,
    },
    {
      target: ">= 250 call setups/s sustained 60 s, every call COMPLETED, every state update delivered",
      measured: `${r.callsPerSecond.toFixed(1)} calls/s over ${r.seconds.toFixed(1)} s, ${r.completed}/${r.calls} COMPLETED, ${r.undelivered} of ${r.stateUpdates} updates undelivered${
        r.rate > 0 && r.rate <= 250 && r.callsPerSecond < 250
          ? ` (paced at ${r.rate}/s: the last call ends after the creates stop, so a run paced at the target measures just under it; pace above it, e.g. BENCH_CALL_RATE=255)`
          : ""
      }`,
      holds:
        r.seconds < 60 && r.callsPerSecond >= 250 && allDone ? undefined : r.callsPerSecond >= 250 && allDone,
    },
    {
      target: "webhook lag (receipt - event time) p99 <= 250 ms",
      measured: `${r.lagP99Ms.toFixed(0)} ms (p50 ${r.lagP50Ms.toFixed(0)}, max ${r.lagMaxMs.toFixed(0)})`,
      holds: r.lagP99Ms <= 250,
    },
    {
      target: "fewer transactions per call (baseline ~10)",
      measured: `${r.xactsPerCall.toFixed(1)} per call`,
      holds: undefined,
    },
  ];
}

export function formatChecks(checks: EngineCheck[]): string[] {
  return checks.map(
    (c) => `  [${c.holds === undefined ? " ?  " : c.holds ? "HOLD" : "MISS"}] ${c.target}: ${c.measured}`,
  );
}
