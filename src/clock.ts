/** Time comes from an injected clock so that tests (and the simulator) control it. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
