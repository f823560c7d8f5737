/**
 * Closed-loop load: `concurrency` callers, each issuing its next request as
 * soon as the previous one answers, until `maxRequests` have been issued or
 * `maxMs` have passed, whichever comes first. Latency is measured per
 * request in the load process (queueing in the client included, as a
 * caller would see it).
 */

export interface LoadOptions {
  concurrency: number;
  maxRequests: number;
  maxMs: number;
}

export interface LoadResult {
  /** Requests that succeeded. */
  ok: number;
  /** Requests that failed. */
  errors: number;
  /** The first failure's message, if any. */
  firstError: string | undefined;
  elapsedMs: number;
  /** Successful requests per second. */
  rps: number;
  /** Latency of successful requests, milliseconds. */
  p50: number;
  p99: number;
  mean: number;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}

/**
 * Runs `call(i)` (i = 0, 1, 2, ... in issue order) under the options' bounds.
 * A failing request is counted and the load goes on; if every request of the
 * first `concurrency * 4` fails, the run stops early (the scenario is broken,
 * not slow).
 */
export async function runLoad(
  call: (i: number) => Promise<unknown>,
  options: LoadOptions,
): Promise<LoadResult> {
  const latencies = new Float64Array(options.maxRequests);
  let issued = 0;
  let ok = 0;
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const deadline = started + options.maxMs;
  const giveUpAfter = options.concurrency * 4;

  const worker = async () => {
    while (issued < options.maxRequests && performance.now() < deadline) {
      if (ok === 0 && errors >= giveUpAfter) return;
      const i = issued++;
      const t0 = performance.now();
      try {
        await call(i);
        latencies[ok++] = performance.now() - t0;
      } catch (err) {
        errors++;
        firstError ??= describe(err);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const elapsedMs = performance.now() - started;
  const sorted = latencies.slice(0, ok).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    ok,
    errors,
    firstError,
    elapsedMs,
    rps: ok / (elapsedMs / 1000),
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: ok > 0 ? sum / ok : Number.NaN,
  };
}
