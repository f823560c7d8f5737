/**
 * SIMULATOR_TIME_SCALE: how much wall-clock time one second of simulated
 * call time takes. 1 (the default) is real time; 0.001 runs a call 1000
 * times faster (a 30-second call lasts 30 ms), so tests and demos need not
 * wait; 2 runs at half speed. A positive number, at most 1000.
 *
 * The scale applies only to the simulator's timers (ringing, talking,
 * digits): timestamps still come from the service clock, so with a scale
 * below 1 the recorded durations of simulated calls are compressed too.
 */
export const DEFAULT_SIMULATOR_TIME_SCALE = 1;
export const MAX_SIMULATOR_TIME_SCALE = 1000;

export class SimulatorConfigError extends Error {
  override name = "SimulatorConfigError";
}

export function loadSimulatorTimeScale(env: NodeJS.ProcessEnv): number {
  const raw = env.SIMULATOR_TIME_SCALE;
  if (raw === undefined || raw.trim() === "") return DEFAULT_SIMULATOR_TIME_SCALE;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > MAX_SIMULATOR_TIME_SCALE) {
    throw new SimulatorConfigError(
      `SIMULATOR_TIME_SCALE must be a number above 0 and at most ${MAX_SIMULATOR_TIME_SCALE} (1 = real time, 0.001 = 1000x faster), got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}
