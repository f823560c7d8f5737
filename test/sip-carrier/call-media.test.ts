/**
 * CallMedia (src/telephony/sip-carrier/call-media.ts) on its own, against a
 * raw UDP peer: audio of two owners queued, one owner's cleared while the
 * other's plays on — whole, right after what of the cleared audio had
 * already gone out — and `queued` per owner; the call's RTP figures logged
 * once at its end; the tracks keep the last 0.5 s, and older audio only while
 * something holds it.
 */
import dgram from "node:dgram";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { encodeG711 } from "../../src/telephony/g711.js";
import { CallMedia, Track } from "../../src/telephony/sip-carrier/call-media.js";

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

  it("keeps the peer's audio from a hold on while it is held, and only the last 0.5 s after", async () => {
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
    const hold = media.hold(0);
    const loud = (from: number, to: number) => media.remoteTrack.loud(from, to, 1000);
    // The peer talks for 4.5 s (a loud noise), 20 ms a packet; the hold is released 3 s in.
    const audio = encodeG711("mulaw", noise(36_000, 3));
    const start = Date.now();
    let heldFirstSecond: boolean | undefined;
    for (let k = 0; k * 160 < audio.length; k++) {
      if (k === 150) {
        // Held from 0: the first second is still there, 3 s in, far past the 0.5 s of history.
        heldFirstSecond = loud(0, 8000);
        hold.release();
      }
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header[1] = k === 0 ? 0x80 : 0;
      header.writeUInt16BE(k, 2);
      header.writeUInt32BE(k * 160, 4);
      header.writeUInt32BE(0x5eed, 8);
      p.socket.send(Buffer.concat([header, audio.subarray(k * 160, k * 160 + 160)]), media.port, "127.0.0.1");
      await new Promise((r) => setTimeout(r, Math.max(0, start + (k + 1) * 20 - Date.now())));
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(media.position()).toBeGreaterThan(4 * 8000);
    expect(heldFirstSecond).toBe(true);
    // Released 1.5 s ago: the prunes forgot what is older than 0.5 s, in whole 0.5 s segments, every
    // 0.2 s: nothing older than 0.5 + 0.2 + 0.5 s (9,600 samples) is left, whatever the phase of
    // the prunes and segments; the peer's latest audio is there.
    expect(loud(0, media.position() - 9600)).toBe(false);
    expect(loud(media.position() - 4000, media.position())).toBe(true);
  }, 20_000);
});

describe("Track.append (the remote party's frames, coalesced into pooled segments)", () => {
  const frame = (seed: number) => noise(160, seed);

  it("renders what was appended, with gaps silent, the same as frames put one by one", () => {
    const appended = new Track();
    const put = new Track();
    let at = 0;
    for (let i = 0; i < 120; i++) {
      // A gap of two frames now and then (silence is not appended), and a frame of another length.
      if (i % 37 === 36) at += 320;
      const f = i === 50 ? noise(240, i) : frame(i);
      appended.append(at, f);
      put.put(at, f.slice());
      at += f.length;
    }
    expect(appended.end).toBe(put.end);
    expect(Array.from(appended.render(0, appended.end + 100))).toEqual(
      Array.from(put.render(0, put.end + 100)),
    );
    // The frames were copied: changing one afterwards changes nothing.
    const f = frame(999);
    appended.append(at, f);
    f.fill(0);
    expect(appended.render(at, at + 160)).toEqual(frame(999));
  });

  it("reuses pruned segments without disturbing the audio still kept", () => {
    const a = new Track();
    const b = new Track();
    const expected = new Map<number, Int16Array>();
    // Two tracks fed in turn, each pruned behind 1 s: segments move from one to the other through the pool.
    for (let i = 0; i < 400; i++) {
      const fa = frame(i);
      const fb = frame(10_000 + i);
      a.append(i * 160, fa);
      b.append(i * 160, fb);
      expected.set(i, fa);
      if (i % 50 === 49) {
        a.prune((i - 50) * 160);
        b.prune((i - 50) * 160);
      }
    }
    for (let i = 350; i < 400; i++) {
      expect(a.render(i * 160, (i + 1) * 160)).toEqual(expected.get(i));
      expect(b.render(i * 160, (i + 1) * 160)).toEqual(frame(10_000 + i));
    }
    // Pruned audio renders as silence.
    expect(a.loud(0, 100 * 160, 0)).toBe(false);
  });
});
