/**
 * The open streams of this process, by name, and the calls waiting for
 * them. A stream lives in the process that holds its RPC; a `<Stream>`
 * finds it only there (see docs/calls.md, Media streams, for what several
 * replicas need).
 */
import { alreadyExists } from "../../api/errors.js";
import type { Scheduler, Timer } from "../../telephony/scheduler.js";
import type { StreamSession } from "./session.js";

export type Claim = { ok: true; session: StreamSession } | { ok: false; reason: string };

interface Waiter {
  name: string;
  settle(claim: Claim): void;
}

export class StreamRegistry {
  private readonly open = new Map<string, StreamSession>();
  private readonly waiters = new Set<Waiter>();

  constructor(readonly scheduler: Scheduler) {}

  /** Open streams (tests, metrics). */
  get size(): number {
    return this.open.size;
  }

  /** Registers an opened stream (ALREADY_EXISTS when its name is open) and hands it to a waiting call. */
  add(session: StreamSession): void {
    if (this.open.has(session.name)) {
      throw alreadyExists(
        "voice.api.enfonica.com/Stream",
        session.name,
        `a stream named ${session.name} is already open`,
      );
    }
    this.open.set(session.name, session);
    session.whenEnded(() => {
      if (this.open.get(session.name) === session) this.open.delete(session.name);
    });
    session.open();
    for (const waiter of this.waiters) {
      if (waiter.name === session.name) {
        session.claim();
        waiter.settle({ ok: true, session });
        return;
      }
    }
  }

  /**
   * Takes the open stream `name` for a call, waiting up to `timeoutSeconds`
   * of call time for it to open; gives up when `abandon` resolves (the call
   * ended). Refused when the stream is already connected to a call.
   */
  claim(name: string, timeoutSeconds: number, abandon: Promise<void>): Promise<Claim> {
    const session = this.open.get(name);
    if (session !== undefined) {
      if (session.state !== "waiting") {
        return Promise.resolve({ ok: false, reason: `the stream ${name} is connected to another call` });
      }
      session.claim();
      return Promise.resolve({ ok: true, session });
    }
    return new Promise<Claim>((resolve) => {
      let timer: Timer | undefined;
      const waiter: Waiter = {
        name,
        settle: (claim) => {
          if (!this.waiters.delete(waiter)) return;
          timer?.cancel();
          resolve(claim);
        },
      };
      this.waiters.add(waiter);
      timer = this.scheduler.after(timeoutSeconds, () =>
        waiter.settle({
          ok: false,
          reason: `no stream named ${name} was open within ${timeoutSeconds} seconds`,
        }),
      );
      void abandon.then(() => waiter.settle({ ok: false, reason: "the call ended" }));
    });
  }
}
