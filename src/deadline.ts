/**
 * Work held to a wall-clock deadline (recording processing, transcription).
 */
import { performance } from "node:perf_hooks";

/** The work took longer than its deadline. */
export class DeadlineExceeded extends Error {
  override name = "DeadlineExceeded";
}

/**
 * `work`, or a DeadlineExceeded ("`what` took longer than `ms` ms") after
 * `ms` milliseconds of wall-clock time; a late result is dropped. Work that
 * blocks the event loop (synchronous encoding) cannot be interrupted, but a
 * result arriving after the deadline still counts as late.
 */
export async function withDeadline<T>(work: () => Promise<T>, ms: number, what: string): Promise<T> {
  const late = () => new DeadlineExceeded(`${what} took longer than ${ms} ms`);
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  const running = Promise.resolve().then(work);
  running.catch(() => {}); // a late failure must not surface as an unhandled rejection
  try {
    const result = await Promise.race([running, deadline]);
    if (performance.now() - start > ms) throw late();
    return result;
  } finally {
    clearTimeout(timer);
  }
}
