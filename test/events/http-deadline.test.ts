/**
 * The time limit of an outbound webhook or media request (src/events/http.ts)
 * covers the whole exchange: waiting for the answer, reading its body, and
 * every redirect hop. When it passes, the request fails with "timed out
 * after N ms", its connection is closed (never handed to a later request),
 * and the next request to the same destination is answered.
 */
import type { ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HttpRequestError, httpGet, httpPost } from "../../src/events/http.js";
import { type Receiver, startReceiver } from "../support/receiver.js";

const within = (timeoutMs: number) => ({ timeoutMs, allowPrivateDestinations: true });

/** Resolves when the connection of `res` is closed. */
const closeOf = (res: ServerResponse) =>
  new Promise<void>((resolve) => {
    if (res.socket === null || res.socket.destroyed) resolve();
    else res.socket.once("close", () => resolve());
  });

describe("outbound HTTP time limit", () => {
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it("gives up on a destination that never answers, closes the connection, and the next request is answered", async () => {
    let closed: Promise<void> | undefined;
    receiver.handle((_req, res) => {
      closed = closeOf(res);
    });
    const started = performance.now();
    await expect(httpPost(`${receiver.base}/silent`, {}, "{}", within(200))).rejects.toThrow(
      new HttpRequestError("timed out after 200 ms"),
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(195);
    await closed;

    receiver.handle((_req, res) => res.end("ok"));
    const res = await httpPost(`${receiver.base}/hook`, {}, "{}", within(5_000));
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe("ok");
    expect(receiver.connections()).toBe(2);
  });

  it("counts the response body: an answer whose body stalls times out", async () => {
    let closed: Promise<void> | undefined;
    receiver.handle((_req, res) => {
      closed = closeOf(res);
      res.writeHead(200, { "content-length": "10" });
      res.write("abc");
    });
    await expect(httpGet(`${receiver.base}/audio.wav`, {}, within(200))).rejects.toThrow(
      new HttpRequestError("timed out after 200 ms"),
    );
    await closed;

    receiver.handle((_req, res) => res.end("0123456789"));
    const res = await httpGet(`${receiver.base}/audio.wav`, {}, within(5_000));
    expect(res.body.toString()).toBe("0123456789");
  });

  it("covers every redirect hop together, not each hop alone", async () => {
    receiver.handle((req, res) => {
      // Each hop answers in 150 ms, under the limit; the two together are over it.
      setTimeout(() => {
        if (req.path === "/first") {
          res.writeHead(307, { location: "/second" });
          res.end();
        } else res.end("second");
      }, 150);
    });
    await expect(httpPost(`${receiver.base}/first`, {}, "{}", within(250))).rejects.toThrow(
      new HttpRequestError("timed out after 250 ms"),
    );
    expect(receiver.requests.map((r) => r.path)).toEqual(["/first", "/second"]);

    // The same two hops within a limit they fit in.
    const res = await httpPost(`${receiver.base}/first`, {}, "{}", within(5_000));
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe("second");
  });

  it("a request answered in time leaves no timer behind to fail it later", async () => {
    const res = await httpPost(`${receiver.base}/hook`, {}, "{}", within(50));
    expect(res.status).toBe(200);
    // Past the limit, the pooled connection is still open and serves the next request.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await httpPost(`${receiver.base}/hook`, {}, "{}", within(5_000))).status).toBe(200);
    expect(receiver.connections()).toBe(1);
  });
});
