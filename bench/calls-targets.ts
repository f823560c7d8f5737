/**
 * The call engine's targets on PostgreSQL (issue #12 item 4, per call since
 * issue #31 item 2), checked against one run of `npm run bench:calls`.
 * Printed, never asserted.
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
      target: "server CPU per call <= 2 ms",
      measured: `${r.serverCpuMsPerCall.toFixed(2)} ms`,
      holds: r.serverCpuMsPerCall <= 2,
    },
    {
      target: "PostgreSQL CPU per call <= 2 ms",
      measured: Number.isNaN(r.databaseCpuMsPerCall)
        ? "not measured"
        : `${r.databaseCpuMsPerCall.toFixed(2)} ms`,
      holds: Number.isNaN(r.databaseCpuMsPerCall) ? undefined : r.databaseCpuMsPerCall <= 2,
    },
    {
      target: ">= 300 call setups/s sustained 60 s, every call COMPLETED, every state update delivered",
      measured: `${r.callsPerSecond.toFixed(1)} calls/s over ${r.seconds.toFixed(1)} s, ${r.completed}/${r.calls} COMPLETED, ${r.undelivered} of ${r.stateUpdates} updates undelivered${
        r.rate > 0 && r.rate <= 300 && r.callsPerSecond < 300
          ? ` (paced at ${r.rate}/s: the last call ends after the creates stop, so a run paced at the target measures just under it; pace above it, e.g. BENCH_CALL_RATE=305)`
          : ""
      }`,
      holds:
        r.seconds < 60 && r.callsPerSecond >= 300 && allDone ? undefined : r.callsPerSecond >= 300 && allDone,
    },
    {
      target: "webhook lag (receipt - event time) p99 <= 250 ms at a paced 80% of the highest sustained rate",
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
