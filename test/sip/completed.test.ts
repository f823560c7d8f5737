/**
 * The store of completed non-INVITE transactions (src/sip/completed.ts) on
 * the deterministic scheduler: each response is answered again until its
 * own timer J and never after, while the process wakes to free them at most
 * once a second, however closely they came.
 */
import { describe, expect, it } from "vitest";
import { CompletedTransactions } from "../../src/sip/completed.js";
import type { Channel } from "../../src/sip/transaction.js";
import type { Scheduler, Timer } from "../../src/telephony/scheduler.js";
import { ManualScheduler } from "../support/scheduler.js";

/** The manual scheduler, counting the timers set on it. */
function counting(inner: ManualScheduler): Scheduler & { set: number } {
  const s = {
    set: 0,
    timeScale: inner.timeScale,
    now: () => inner.now(),
    after(seconds: number, fn: () => void): Timer {
      s.set++;
      return inner.after(seconds, fn);
    },
  };
  return s;
}

function channel(): Channel & { sent: string[] } {
  const sent: string[] = [];
  return { sent, send: (b: Buffer) => sent.push(b.toString("latin1")) } as unknown as Channel & {
    sent: string[];
  };
}

describe("completed transactions", () => {
  it("answers each retransmission until that transaction's timer J, and not a moment after", async () => {
    const manual = new ManualScheduler();
    const store = new CompletedTransactions(manual, 32);
    const a = channel();
    store.add("a", Buffer.from("SIP/2.0 200 OK a"), a);
    await manual.advance(0.03);
    store.add("b", Buffer.from("SIP/2.0 200 OK b"), a);
    await manual.advance(31.969);
    expect(store.absorb("a")).toBe(true);
    expect(store.size).toBe(2);
    await manual.advance(0.001); // a's timer J
    expect(store.absorb("a")).toBe(false);
    expect(store.size).toBe(1);
    await manual.advance(0.029);
    expect(store.absorb("b")).toBe(true);
    await manual.advance(0.001); // b's
    expect(store.absorb("b")).toBe(false);
    expect(store.size).toBe(0);
    expect(a.sent).toEqual(["SIP/2.0 200 OK a", "SIP/2.0 200 OK b"]);
  });

  it("frees entries that came 30 ms apart in sweeps at most a second apart, not a wake-up each", async () => {
    const manual = new ManualScheduler();
    const scheduler = counting(manual);
    const store = new CompletedTransactions(scheduler, 32);
    const c = channel();
    // A registrar's minute: 2,000 answers, one every 30 ms.
    for (let i = 0; i < 2000; i++) {
      store.add(`k${i}`, Buffer.from(`r${i}`), c);
      await manual.advance(0.03);
    }
    await manual.advance(40);
    expect(store.size).toBe(0);
    // 60 s of expiries: one timer at the first add, then one per sweep (>= 1 s apart).
    expect(scheduler.set).toBeGreaterThan(1);
    expect(scheduler.set).toBeLessThanOrEqual(62);
    expect(manual.pendingCount).toBe(0);
  });
});
