import { describe, expect, it } from "vitest";
import { thenWhenDrained } from "../../src/transport/rpc-errors.js";

/** Chunks 1..n, recording how the consumer left it. */
function source(n: number, log: string[]): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]() {
      let i = 0;
      return {
        next: async () => {
          if (i >= n) {
            log.push("end");
            return { done: true, value: undefined };
          }
          i++;
          log.push(`chunk ${i}`);
          return { done: false, value: Uint8Array.of(i) };
        },
        return: async (value?: unknown) => {
          log.push("return");
          return { done: true, value };
        },
      };
    },
  };
}

describe("thenWhenDrained (gRPC trailers fixed once the body is out)", () => {
  it("calls back once, after the last chunk and before the consumer sees the end", async () => {
    const log: string[] = [];
    const body = thenWhenDrained(source(2, log), () => log.push("drained"));
    const seen: number[] = [];
    for await (const chunk of body) {
      seen.push(chunk[0]!);
      log.push(`consumed ${chunk[0]}`);
    }
    log.push("loop over");
    expect(seen).toEqual([1, 2]);
    expect(log).toEqual(["chunk 1", "consumed 1", "chunk 2", "consumed 2", "end", "drained", "loop over"]);
  });

  it("calls back only once when the consumer asks past the end", async () => {
    let calls = 0;
    const it = thenWhenDrained(source(1, []), () => calls++)[Symbol.asyncIterator]();
    expect((await it.next()).done).toBe(false);
    expect((await it.next()).done).toBe(true);
    expect((await it.next()).done).toBe(true);
    expect(calls).toBe(1);
  });

  it("passes a consumer that stops early on to the source, without the callback", async () => {
    const log: string[] = [];
    const body = thenWhenDrained(source(3, log), () => log.push("drained"));
    for await (const chunk of body) {
      if (chunk[0] === 1) break;
    }
    expect(log).toEqual(["chunk 1", "return"]);
  });

  it("rejects with the callback's error, as a generator's next would", async () => {
    const it = thenWhenDrained(source(0, []), () => {
      throw new Error("bad trailer");
    })[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toThrow("bad trailer");
  });

  it("rejects with the source's error", async () => {
    const failing: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error("stream reset")) }),
    };
    let calls = 0;
    const it = thenWhenDrained(failing, () => calls++)[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toThrow("stream reset");
    expect(calls).toBe(0);
  });
});
