/**
 * Outbound webhook and media requests reuse keep-alive connections
 * (src/events/agents.ts) without weakening the destination guard: a
 * connection pooled for an allowed private destination is never handed to a
 * guarded request, and a pooled socket the receiver closed while idle does
 * not fail the next request.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HttpRequestError, httpGet, httpPost } from "../../src/events/http.js";
import { type Receiver, startReceiver } from "../support/receiver.js";

const open = { timeoutMs: 10_000, allowPrivateDestinations: true };
const guarded = { timeoutMs: 10_000, allowPrivateDestinations: false };

describe("outbound HTTP keep-alive", () => {
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it("sends consecutive requests to one destination over one connection", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await httpPost(
        `${receiver.base}/hook`,
        { "content-type": "application/json" },
        `{"i":${i}}`,
        open,
      );
      expect(res.status).toBe(200);
    }
    const media = await httpGet(`${receiver.base}/audio.wav`, {}, open);
    expect(media.status).toBe(200);
    expect(receiver.requests.map((r) => r.body)).toEqual([
      '{"i":0}',
      '{"i":1}',
      '{"i":2}',
      '{"i":3}',
      '{"i":4}',
      "",
    ]);
    expect(receiver.connections()).toBe(1);
  });

  it("refuses a private destination to a guarded request even with a pooled connection open to it", async () => {
    expect((await httpPost(`${receiver.base}/hook`, {}, "{}", open)).status).toBe(200);
    // By name (the guard's lookup) and by literal (checked before the request).
    for (const base of [`http://localhost:${receiver.port}`, receiver.base]) {
      await expect(httpPost(`${base}/hook`, {}, "{}", guarded)).rejects.toThrow(HttpRequestError);
    }
    expect(receiver.requests).toHaveLength(1);
  });

  it("delivers on a new connection when the receiver closed the pooled one while idle", async () => {
    expect((await httpPost(`${receiver.base}/hook`, {}, '{"n":1}', open)).status).toBe(200);
    receiver.closeIdle();
    const res = await httpPost(`${receiver.base}/hook`, {}, '{"n":2}', open);
    expect(res.status).toBe(200);
    expect(receiver.requests.map((r) => r.body)).toEqual(['{"n":1}', '{"n":2}']);
    expect(receiver.connections()).toBe(2);
  });
});
