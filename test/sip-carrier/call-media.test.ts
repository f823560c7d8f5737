/**
 * CallMedia (src/telephony/sip-carrier/call-media.ts) on its own, against a
 * raw UDP peer: audio of two owners queued, one owner's cleared while the
 * other's plays on — whole, right after what of the cleared audio had
 * already gone out — and `queued` per owner; the call's RTP figures logged
 * once at its end.
 */
import dgram from "node:dgram";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { encodeG711 } from "../../src/telephony/g711.js";
import { CallMedia } from "../../src/telephony/sip-carrier/call-media.js";

function noise(samples: number, seed: number): Int16Array {
  let x = seed;
  return Int16Array.from({ length: samples }, () => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return ((x >> 8) % 16000) - 8000;
  });
}

describe("CallMedia", () => {
  const closers: Array<() => void> = [];
  afterEach(() => {
    for (const c of closers.splice(0)) c();
  });

  async function peer(): Promise<{ port: number; payloads: Buffer[]; socket: dgram.Socket }> {
    const socket = dgram.createSocket("udp4");
    await new Promise<void>((r) => socket.bind(0, "127.0.0.1", () => r()));
    const payloads: Buffer[] = [];
    socket.on("message", (data) => payloads.push(data.subarray(12)));
    closers.push(() => socket.close());
    return { port: socket.address().port, payloads, socket };
  }

  it("clears one owner's audio and plays the other's on, whole, right after what was sent", async () => {
    const p = await peer();
    const media = await CallMedia.open({ address: "127.0.0.1", portMin: 0, portMax: 0, timeoutSeconds: 0 });
    closers.push(() => media.close());
    media.configure({
      codec: "PCMU",
      payloadType: 0,
      telephoneEvent: 101,
      remote: { address: "127.0.0.1", port: p.port },
      hold: false,
    });
    media.start();
    const a = noise(8000, 1);
    const b = noise(2400, 2);
    const owners = { a: {}, b: {} };
    const sentA = media.send(a, owners.a);
    const sentB = media.send(b, owners.b);
    expect(media.queued(owners.a) + media.queued(owners.b)).toBeLessThanOrEqual(a.length + b.length);
    expect(media.queued(owners.b)).toBe(b.length);
    await new Promise((r) => setTimeout(r, 200));
    media.clear(owners.a);
    expect(media.queued(owners.a)).toBe(0);
    expect(media.queued(owners.b)).toBe(b.length);
    expect(await sentA).toBe(false);
    expect(await sentB).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    const all = Buffer.concat(p.payloads);
    const bAt = all.indexOf(Buffer.from(encodeG711("mulaw", b)));
    expect(bAt).toBeGreaterThan(0);
    // Before B: silence (μ-law 0xff) then A's first bytes, up to where the clear cut it.
    const before = all.subarray(0, bAt);
    const aStart = before.findIndex((x) => x !== 0xff);
    const aSent = before.subarray(aStart);
    expect(aSent.length).toBeGreaterThan(0);
    expect(aSent.length).toBeLessThan(a.length);
    expect(aSent.equals(Buffer.from(encodeG711("mulaw", a.subarray(0, aSent.length))))).toBe(true);
    // The local track holds what went out: A's part, then B right after it, then nothing.
    const local = media.localTrack.render(0, media.localTrack.end);
    expect(local.length).toBe(media.localTrack.end);
    const localB = local.subarray(local.length - b.length);
    expect(Array.from(localB)).toEqual(Array.from(b));
    const localA = local.subarray(local.length - b.length - aSent.length, local.length - b.length);
    expect(Array.from(localA)).toEqual(Array.from(a.subarray(0, aSent.length)));
    // Nothing of A beyond what was sent.
    expect(media.localTrack.loud(local.length, local.length + a.length, 0)).toBe(false);
  });

  it("logs the call's RTP figures once, at its end", async () => {
    const p = await peer();
    const lines: string[] = [];
    const log = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const media = await CallMedia.open(
      { address: "127.0.0.1", portMin: 0, portMax: 0, timeoutSeconds: 0 },
      log,
    );
    closers.push(() => media.close());
    media.configure({
      codec: "PCMU",
      payloadType: 0,
      telephoneEvent: undefined,
      remote: { address: "127.0.0.1", port: p.port },
      hold: false,
    });
    media.start();
    // 30 packets of μ-law silence, number 12 never sent: one lost.
    for (let i = 0; i < 30; i++) {
      const packet = Buffer.alloc(172, 0xff);
      packet[0] = 0x80;
      packet[1] = 0;
      packet.writeUInt16BE(1000 + i, 2);
      packet.writeUInt32BE(160 * i, 4);
      packet.writeUInt32BE(0xfeed, 8);
      if (i !== 12) p.socket.send(packet, media.port, "127.0.0.1");
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 100));
    media.close("call-42");
    media.close("call-42");
    const figures = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "call RTP figures");
    expect(figures).toHaveLength(1);
    expect(figures[0]).toMatchObject({
      call: "call-42",
      rtp: { codec: "PCMU", packetsReceived: 29, lost: 1 },
    });
    expect(figures[0].rtp.packetsSent).toBeGreaterThan(0);
    expect(figures[0].rtp.jitterMs).toBeGreaterThanOrEqual(0);
  });
});
