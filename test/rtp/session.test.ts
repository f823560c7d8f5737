/**
 * RtpSession against RTP peers on raw node:dgram sockets that build and
 * read packets with Buffer calls of their own (never src/rtp/packet.ts).
 * The pacer runs on a ManualScheduler, so each 20 ms frame happens when the
 * test advances time; datagrams are real, on 127.0.0.1. Checked: bytes sent
 * (PT, marker, sequence, timestamps by 160, constant SSRC, G.711 payload),
 * symmetric RTP latching, loss/reordering/duplicates and the decoded audio,
 * an SSRC change and a timestamp jump, DTMF out and in (RFC 4733 and
 * in-band), the RTP timeout, RTCP reports both ways, malformed datagrams,
 * play/clear/queued/drained, close.
 */
import dgram from "node:dgram";
import { afterEach, describe, expect, it } from "vitest";
import type { FrameTimers } from "../../src/media/frame-clock.js";
import { DtmfDetector } from "../../src/rtp/dtmf-detector.js";
import { Pacer, realTimers } from "../../src/rtp/pacer.js";
import { RtpBindError } from "../../src/rtp/ports.js";
import { RtpSession, type RtpSessionOptions } from "../../src/rtp/session.js";
import { alawToLinear, linearToMulaw, mulawToLinear } from "../../src/telephony/g711.js";
import { ManualScheduler } from "../support/scheduler.js";

/** Any free port pair, as tests use ports (a range is checked in its own test). */
const PORT_MIN = 0;
const PORT_MAX = 0;
const WAIT_MS = 10_000;

interface Rtp {
  version: number;
  marker: boolean;
  pt: number;
  seq: number;
  ts: number;
  ssrc: number;
  payload: Buffer;
}

/** The peer's own reading of an RTP datagram (no CSRC, extension or padding expected). */
function readRtp(b: Buffer): Rtp {
  return {
    version: b[0]! >> 6,
    marker: (b[1]! & 0x80) !== 0,
    pt: b[1]! & 0x7f,
    seq: b.readUInt16BE(2),
    ts: b.readUInt32BE(4),
    ssrc: b.readUInt32BE(8),
    payload: b.subarray(12),
  };
}

/** The peer's own RTP datagram. */
function rtp(p: {
  pt: number;
  seq: number;
  ts: number;
  ssrc: number;
  marker?: boolean;
  payload: Buffer;
}): Buffer {
  const h = Buffer.alloc(12);
  h[0] = 0x80;
  h[1] = (p.marker ? 0x80 : 0) | p.pt;
  h.writeUInt16BE(p.seq & 0xffff, 2);
  h.writeUInt32BE(p.ts >>> 0, 4);
  h.writeUInt32BE(p.ssrc >>> 0, 8);
  return Buffer.concat([h, p.payload]);
}

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A UDP peer on 127.0.0.1 recording what it receives. */
class Peer {
  readonly received: Buffer[] = [];
  private constructor(readonly socket: dgram.Socket) {
    socket.on("message", (msg) => this.received.push(msg));
  }
  static async open(address = "127.0.0.1"): Promise<Peer> {
    const socket = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, address, resolve));
    return new Peer(socket);
  }
  get port(): number {
    return this.socket.address().port;
  }
  send(data: Buffer, port: number): void {
    this.socket.send(data, port, "127.0.0.1");
  }
  async receive(count: number): Promise<Buffer[]> {
    await until(`${count} datagrams`, () => this.received.length >= count);
    return this.received.splice(0, count);
  }
  close(): void {
    this.socket.close();
  }
}

function timersOn(scheduler: ManualScheduler): FrameTimers {
  return {
    nowMs: () => scheduler.now().getTime(),
    after: (seconds, fn) => scheduler.after(seconds, fn),
    timeScale: 1,
  };
}

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

interface Setup {
  scheduler: ManualScheduler;
  pacer: Pacer;
  session: RtpSession;
  peer: Peer;
  rtcpPeer: Peer;
  audio: Array<{ samples: Int16Array; kind: string; sequence?: number | undefined }>;
  dtmf: Array<{ digit: string; method: string; durationMs?: number | undefined }>;
  timeouts: number;
  drained: number;
}

async function setup(options: Partial<RtpSessionOptions> = {}): Promise<Setup> {
  const scheduler = new ManualScheduler();
  const pacer = new Pacer(timersOn(scheduler));
  const peer = await Peer.open();
  const rtcpPeer = await Peer.open();
  const s = {
    scheduler,
    pacer,
    peer,
    rtcpPeer,
    audio: [],
    dtmf: [],
    timeouts: 0,
    drained: 0,
  } as unknown as Setup;
  s.session = await RtpSession.open({
    address: "127.0.0.1",
    portMin: PORT_MIN,
    portMax: PORT_MAX,
    codec: "PCMU",
    telephoneEventPayloadType: 101,
    remote: { address: "127.0.0.1", port: peer.port, rtcpPort: rtcpPeer.port },
    pacer,
    events: {
      audio: (samples, frame) =>
        s.audio.push({ samples: samples.slice(), kind: frame.kind, sequence: frame.sequence }),
      dtmf: (digit, info) => s.dtmf.push({ digit, ...info }),
      timeout: () => s.timeouts++,
      drained: () => s.drained++,
    },
    ...options,
  });
  cleanup.push(
    () => s.session.close(),
    () => peer.close(),
    () => rtcpPeer.close(),
    () => pacer.stop(),
  );
  return s;
}

/** μ-law frame of one repeated byte. */
const ulawFrame = (byte: number) => Buffer.alloc(160, byte);

describe("RtpSession", () => {
  it("holds an even RTP port and the next for RTCP when any port will do, whether the system gave an even or an odd one", async () => {
    const pacer = new Pacer(realTimers());
    cleanup.push(() => pacer.stop());
    const taken = async (port: number) => {
      const probe = dgram.createSocket("udp4");
      const err = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
        probe.once("error", resolve);
        probe.bind(port, "127.0.0.1", () => resolve(undefined));
      });
      probe.close();
      return err?.code === "EADDRINUSE";
    };
    // 24 sessions: the system gives odd ports about half the time, so both ways are taken.
    for (let i = 0; i < 24; i++) {
      const session = await RtpSession.open({
        address: "127.0.0.1",
        portMin: 0,
        portMax: 0,
        codec: "PCMU",
        remote: { address: "127.0.0.1", port: 9 },
        pacer,
      });
      cleanup.push(() => session.close());
      expect(session.localPort % 2).toBe(0);
      expect(await taken(session.localPort)).toBe(true);
      expect(await taken(session.localPort + 1)).toBe(true);
    }
  });

  it("binds an even port with RTCP on the next, from a range, and says when the range is taken", async () => {
    const { session: any } = await setup();
    expect(any.localPort % 2).toBe(0);
    // A range of three ports around the pair the first session just released: only that pair fits.
    const pacer0 = new Pacer(realTimers());
    cleanup.push(() => pacer0.stop());
    const from = any.localPort;
    await any.close();
    const session = await RtpSession.open({
      address: "127.0.0.1",
      portMin: from - 1,
      portMax: from + 1,
      codec: "PCMU",
      remote: { address: "127.0.0.1", port: 9 },
      pacer: pacer0,
    });
    cleanup.push(() => session.close());
    expect(session.localPort).toBe(from);
    const pacer = new Pacer(realTimers());
    cleanup.push(() => pacer.stop());
    await expect(
      RtpSession.open({
        address: "127.0.0.1",
        portMin: session.localPort,
        portMax: session.localPort + 1,
        codec: "PCMU",
        remote: { address: "127.0.0.1", port: 9 },
        pacer,
      }),
    ).rejects.toBeInstanceOf(RtpBindError);
    await expect(
      RtpSession.open({
        portMin: 5000,
        portMax: 4000,
        codec: "PCMU",
        remote: { address: "127.0.0.1", port: 9 },
        pacer,
      }),
    ).rejects.toThrow(/port range/);
    await expect(
      RtpSession.open({
        portMin: 5000,
        portMax: 5999,
        codec: "PCMU",
        remote: { address: "example.com", port: 9 },
        pacer,
      }),
    ).rejects.toThrow(/IP address/);
  });

  it("sends PCMU every 20 ms: PT 0, marker first, seq +1, ts +160, one SSRC, the queued audio then silence", async () => {
    const { scheduler, session, peer } = await setup();
    const pcm = Int16Array.from({ length: 400 }, (_, i) => Math.round(8000 * Math.sin(i / 5)));
    session.play(pcm);
    expect(session.queued).toBe(50);
    await scheduler.advance(0.1);
    const packets = (await peer.receive(5)).map(readRtp);
    expect(packets.map((p) => p.version)).toEqual([2, 2, 2, 2, 2]);
    expect(packets.map((p) => p.pt)).toEqual([0, 0, 0, 0, 0]);
    expect(packets.map((p) => p.marker)).toEqual([true, false, false, false, false]);
    for (let i = 1; i < 5; i++) {
      expect(packets[i]!.seq).toBe((packets[0]!.seq + i) & 0xffff);
      expect(packets[i]!.ts).toBe((packets[0]!.ts + 160 * i) >>> 0);
      expect(packets[i]!.ssrc).toBe(packets[0]!.ssrc);
    }
    expect(packets[0]!.ssrc).toBe(session.ssrc);
    const sent = Buffer.concat(packets.map((p) => p.payload));
    expect(sent.length).toBe(800);
    expect([...sent.subarray(0, 400)]).toEqual(Array.from(pcm, (v) => linearToMulaw(v)));
    expect(sent.subarray(400).every((b) => b === 0xff)).toBe(true);
    expect(session.queued).toBe(0);
    const stats = session.stats();
    expect(stats.sent).toEqual({ packets: 5, octets: 800 });
  });

  it("sends every frame of a very late wake-up intact (the socket sends after the tick)", async () => {
    const s = await setup();
    s.session.play(Int16Array.from({ length: 160 * 41 }, (_, i) => Math.floor(i / 160) * 100));
    await s.scheduler.advance(0.02);
    const [first] = (await s.peer.receive(1)).map(readRtp);
    // Hold the clock back 800 ms, then let the timer fire: 40 frames are due in one wake-up.
    s.scheduler.clock.set(new Date(s.scheduler.now().getTime() + 800));
    await s.scheduler.advance(0);
    const packets = (await s.peer.receive(40)).map(readRtp);
    expect(packets.map((p) => (p.seq - first!.seq) & 0xffff)).toEqual(
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
    expect(packets.map((p) => (p.ts - first!.ts) >>> 0)).toEqual(
      Array.from({ length: 40 }, (_, i) => 160 * (i + 1)),
    );
    expect(packets.map((p) => p.payload[0])).toEqual(
      Array.from({ length: 40 }, (_, i) => linearToMulaw((i + 1) * 100)),
    );
  });

  it("sends PCMA silence as 0xD5 and reports drained once the queue empties", async () => {
    const s = await setup({ codec: "PCMA" });
    s.session.play(new Int16Array(200).fill(1000));
    await s.scheduler.advance(0.06);
    const packets = (await s.peer.receive(3)).map(readRtp);
    expect(packets.map((p) => p.pt)).toEqual([8, 8, 8]);
    expect(packets[1]!.payload.subarray(0, 40).every((b) => Math.abs(alawToLinear(b) - 1000) < 40)).toBe(
      true,
    );
    expect(packets[1]!.payload.subarray(40).every((b) => b === 0xd5)).toBe(true);
    expect(packets[2]!.payload.every((b) => b === 0xd5)).toBe(true);
    expect(s.drained).toBe(1);
  });

  it("decodes received PCMA, and ignores PCMU on a PCMA session", async () => {
    const s = await setup({ codec: "PCMA", jitterMs: 20 });
    s.peer.send(rtp({ pt: 0, seq: 1, ts: 0, ssrc: 6, payload: ulawFrame(0x00) }), s.session.localPort);
    s.peer.send(
      rtp({ pt: 8, seq: 2, ts: 160, ssrc: 6, payload: Buffer.alloc(160, 0x2a) }),
      s.session.localPort,
    );
    await until("the packets", () => s.session.stats().received.packets === 1);
    await s.scheduler.advance(0.02);
    const heard = s.audio.filter((a) => a.kind === "audio");
    expect(heard).toHaveLength(1);
    expect(heard[0]!.samples.every((v) => v === alawToLinear(0x2a))).toBe(true);
    expect(s.session.stats().counters.unknownPayload).toBe(1);
  });

  it("drives every session from the one pacer timer", async () => {
    const s = await setup();
    const others = await Promise.all(
      [1, 2].map(() =>
        RtpSession.open({
          address: "127.0.0.1",
          portMin: PORT_MIN,
          portMax: PORT_MAX,
          codec: "PCMU",
          remote: { address: "127.0.0.1", port: s.peer.port },
          pacer: s.pacer,
        }),
      ),
    );
    cleanup.push(...others.map((o) => () => o.close()));
    expect(s.scheduler.pendingCount).toBe(1);
    await s.scheduler.advance(0.1);
    const ssrcs = (await s.peer.receive(15)).map((b) => readRtp(b).ssrc);
    expect(new Set(ssrcs).size).toBe(3);
    expect(s.pacer.stats()).toMatchObject({ streams: 6, ticks: 5, sent: 15 });
  });

  it("sends nothing while held, the time passing, and resumes with the next sequence number, marked", async () => {
    const s = await setup();
    s.session.play(Int16Array.from({ length: 160 * 6 }, (_, i) => Math.floor(i / 160) * 1000));
    await s.scheduler.advance(0.02);
    const [before] = (await s.peer.receive(1)).map(readRtp);
    s.session.setSending(false);
    await s.scheduler.advance(0.06);
    s.session.setSending(true);
    await s.scheduler.advance(0.04);
    const after = (await s.peer.receive(2)).map(readRtp);
    expect(after.map((p) => (p.seq - before!.seq) & 0xffff)).toEqual([1, 2]);
    expect(after.map((p) => (p.ts - before!.ts) >>> 0)).toEqual([640, 800]);
    expect(after.map((p) => p.marker)).toEqual([true, false]);
    expect(after.map((p) => p.payload[0])).toEqual([linearToMulaw(4000), linearToMulaw(5000)]);
    expect(s.session.stats().sent.packets).toBe(3);
  });

  it("says when each queued chunk has gone out, or was dropped", async () => {
    const s = await setup();
    const done: Array<[string, boolean]> = [];
    s.session.play(new Int16Array(100), (sent) => done.push(["a", sent]));
    s.session.play(new Int16Array(100), (sent) => done.push(["b", sent]));
    s.session.play(new Int16Array(400), (sent) => done.push(["c", sent]));
    s.session.play(new Int16Array(0), (sent) => done.push(["empty", sent]));
    await s.scheduler.advance(0.02);
    expect(done).toEqual([
      ["empty", true],
      ["a", true],
    ]);
    await s.scheduler.advance(0.02);
    expect(done.slice(2)).toEqual([["b", true]]);
    s.session.play(new Int16Array(160), (sent) => done.push(["d", sent]));
    s.session.clear();
    expect(done.slice(3)).toEqual([
      ["c", false],
      ["d", false],
    ]);
    s.session.play(new Int16Array(160), (sent) => done.push(["e", sent]));
    await s.session.close();
    s.session.play(new Int16Array(160), (sent) => done.push(["f", sent]));
    expect(done.slice(5)).toEqual([
      ["e", false],
      ["f", false],
    ]);
  });

  it("clears what was queued", async () => {
    const s = await setup();
    s.session.play(new Int16Array(8000).fill(3000));
    await s.scheduler.advance(0.02);
    s.session.clear();
    expect(s.session.queued).toBe(0);
    await s.scheduler.advance(0.02);
    const [, second] = (await s.peer.receive(2)).map(readRtp);
    expect(second!.payload.every((b) => b === 0xff)).toBe(true);
  });

  it("latches to the source of the first valid packet from the remote's address, and drops others", async () => {
    const s = await setup();
    const natted = await Peer.open();
    const stranger = await Peer.open();
    cleanup.push(
      () => natted.close(),
      () => stranger.close(),
    );
    await s.scheduler.advance(0.02);
    await s.peer.receive(1); // to the SDP address first
    natted.send(Buffer.from("not rtp"), s.session.localPort); // not valid: no latch
    natted.send(rtp({ pt: 0, seq: 1, ts: 0, ssrc: 5, payload: ulawFrame(0xff) }), s.session.localPort);
    await until("the latch", () => s.session.stats().latched);
    stranger.send(rtp({ pt: 0, seq: 2, ts: 160, ssrc: 5, payload: ulawFrame(0xff) }), s.session.localPort);
    await until("the stranger's packet", () => s.session.stats().counters.rejected === 1);
    await s.scheduler.advance(0.04);
    expect((await natted.receive(2)).map(readRtp).map((p) => p.pt)).toEqual([0, 0]);
    expect(s.peer.received).toHaveLength(0);
    expect(stranger.received).toHaveLength(0);
    expect(s.session.stats()).toMatchObject({
      sendingTo: `127.0.0.1:${natted.port}`,
      counters: { malformed: 1, rejected: 1 },
      received: { packets: 1 },
    });
  });

  it("follows a new remote (a re-INVITE) and latches again", async () => {
    const s = await setup();
    const moved = await Peer.open();
    cleanup.push(() => moved.close());
    s.peer.send(rtp({ pt: 0, seq: 1, ts: 0, ssrc: 5, payload: ulawFrame(0xff) }), s.session.localPort);
    await until("the latch", () => s.session.stats().latched);
    s.session.setRemote({ address: "127.0.0.1", port: moved.port });
    expect(s.session.stats()).toMatchObject({ latched: false, sendingTo: `127.0.0.1:${moved.port}` });
    await s.scheduler.advance(0.02);
    expect(await moved.receive(1)).toHaveLength(1);
    moved.send(rtp({ pt: 0, seq: 2, ts: 160, ssrc: 5, payload: ulawFrame(0xff) }), s.session.localPort);
    await until("the new latch", () => s.session.stats().latched);
    expect(s.peer.received).toHaveLength(0);
    expect(() => s.session.setRemote({ address: "phone.example", port: 4000 })).toThrow(/IP address/);
  });

  it("refuses packets from another address unless latching is open to any", async () => {
    const strict = await setup({ remote: { address: "127.0.0.2", port: 9 } });
    strict.peer.send(
      rtp({ pt: 0, seq: 1, ts: 0, ssrc: 5, payload: ulawFrame(0xff) }),
      strict.session.localPort,
    );
    await until("the rejection", () => strict.session.stats().counters.rejected === 1);
    expect(strict.session.stats().latched).toBe(false);
    const open = await setup({ remote: { address: "127.0.0.2", port: 9 }, latch: "any" });
    open.peer.send(rtp({ pt: 0, seq: 1, ts: 0, ssrc: 5, payload: ulawFrame(0xff) }), open.session.localPort);
    await until("the latch", () => open.session.stats().latched);
    expect(open.session.stats().sendingTo).toBe(`127.0.0.1:${open.peer.port}`);
  });

  it("plays received audio in order through loss, reordering and duplicates", async () => {
    const s = await setup({ jitterMs: 200 });
    const ssrc = 0x1234;
    // Frame k carries μ-law byte 0x80 + k (a distinct level each).
    const order = [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13, 12, 14, 15, 15, 16, 17, 18, 19];
    for (const k of order) {
      s.peer.send(
        rtp({ pt: 0, seq: 65530 + k, ts: 1000 + 160 * k, ssrc, payload: ulawFrame(0x80 + k) }),
        s.session.localPort,
      );
    }
    await until("all packets", () => s.session.stats().received.packets === order.length);
    await s.scheduler.advance(0.02 * 40);
    const heard = s.audio.filter((a) => a.kind !== "silence");
    expect(heard.map((a) => a.samples[0])).toEqual(
      [0, 1, 2, 3, 4, 5, 6, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19].map((k) =>
        mulawToLinear(0x80 + k),
      ),
    );
    expect(heard.map((a) => a.kind)[7]).toBe("concealed");
    expect(heard.map((a) => a.sequence)).toEqual(Array.from({ length: 20 }, (_, k) => (65530 + k) & 0xffff));
    const stats = s.session.stats();
    expect(stats.jitterBuffer).toMatchObject({ lost: 1, reordered: 1, duplicate: 1, played: 19 });
    // RFC 3550 A.3: expected (20) minus received (20, the duplicate counted): loss hidden by a duplicate.
    expect(stats.cumulativeLost).toBe(0);
    expect(stats.remoteSsrc).toBe(ssrc);
    // Every frame, silence included, is 160 samples, one per 20 ms.
    expect(s.audio).toHaveLength(40);
    expect(s.audio.every((a) => a.samples.length === 160)).toBe(true);
  });

  it("re-syncs on a remote SSRC change and plays on through a timestamp jump", async () => {
    const s = await setup();
    const send = async (ssrc: number, seqs: number[], ts: (i: number) => number, byte: number) => {
      const before = s.session.stats().received.packets;
      seqs.forEach((seq, i) => {
        s.peer.send(rtp({ pt: 0, seq, ts: ts(i), ssrc, payload: ulawFrame(byte + i) }), s.session.localPort);
      });
      await until("packets", () => s.session.stats().received.packets === before + seqs.length);
    };
    await send(1, [100, 101, 102, 103], (i) => (i < 2 ? i * 160 : 900_000 + i * 160), 0x90);
    await s.scheduler.advance(0.02 * 6);
    await send(2, [7000, 7001, 7002], (i) => 5_000_000 + i * 160, 0xa0);
    await s.scheduler.advance(0.02 * 6);
    const heard = s.audio.filter((a) => a.kind === "audio").map((a) => a.samples[0]);
    expect(heard).toEqual([0x90, 0x91, 0x92, 0x93, 0xa0, 0xa1, 0xa2].map(mulawToLinear));
    const stats = s.session.stats();
    expect(stats.jitterBuffer.resyncs).toBe(1);
    expect(stats.remoteSsrc).toBe(2);
    expect(stats.jitterBuffer.lost).toBe(0);
  });

  it("sends a key as RFC 4733 events: marker first, one timestamp, three ends, then audio on the same clock", async () => {
    const s = await setup();
    await s.scheduler.advance(0.02);
    const [start] = (await s.peer.receive(1)).map(readRtp);
    s.session.sendDtmf("9", 60);
    expect(() => s.session.sendDtmf("x")).toThrow(/not a DTMF key/);
    await s.scheduler.advance(0.02 * 7);
    const packets = (await s.peer.receive(7)).map(readRtp);
    expect(packets.map((p) => p.pt)).toEqual([101, 101, 101, 101, 101, 0, 0]);
    expect(packets.map((p) => p.marker)).toEqual([true, false, false, false, false, false, false]);
    expect(packets.map((p) => p.seq)).toEqual(
      Array.from({ length: 7 }, (_, i) => (start!.seq + 1 + i) & 0xffff),
    );
    const eventTs = (start!.ts + 160) >>> 0;
    expect(packets.slice(0, 5).every((p) => p.ts === eventTs)).toBe(true);
    expect(packets[5]!.ts).toBe((start!.ts + 6 * 160) >>> 0);
    expect(packets.slice(0, 5).map((p) => p.payload.toString("hex"))).toEqual([
      "090a00a0",
      "090a0140",
      "098a01e0",
      "098a01e0",
      "098a01e0",
    ]);
    expect(packets.every((p) => p.ssrc === s.session.ssrc)).toBe(true);
  });

  it("sends a key in-band when no telephone-event was negotiated", async () => {
    const s = await setup({ telephoneEventPayloadType: undefined });
    s.session.play(new Int16Array(1600)); // the tone goes ahead of queued audio
    s.session.sendDtmf("1", 100);
    await s.scheduler.advance(0.02 * 10);
    const packets = (await s.peer.receive(10)).map(readRtp);
    expect(packets.every((p) => p.pt === 0)).toBe(true);
    const pcm = Int16Array.from(Buffer.concat(packets.map((p) => p.payload)), (b) => mulawToLinear(b));
    expect(new DtmfDetector().push(pcm).map((d) => d.digit)).toEqual(["1"]);
    expect(s.session.queued).toBe(1600 / 8 - (200 - 150)); // 150 ms of tone and pause went first
  });

  it("reports an RFC 4733 press once, however many packets carry it, and plays its time as silence", async () => {
    const s = await setup();
    const audio = (seq: number, ts: number) =>
      s.peer.send(rtp({ pt: 0, seq, ts, ssrc: 3, payload: ulawFrame(0x90) }), s.session.localPort);
    audio(8, 47680);
    audio(9, 47840);
    // One press at timestamp 48000: start (marker), an update sent twice, and four ends.
    const payloads = ["050a00a0", "050a0140", "050a0140", "058a01e0", "058a01e0", "058a01e0", "058a01e0"];
    payloads.forEach((hex, i) => {
      s.peer.send(
        rtp({ pt: 101, seq: 10 + i, ts: 48000, ssrc: 3, marker: i === 0, payload: Buffer.from(hex, "hex") }),
        s.session.localPort,
      );
    });
    audio(17, 48960);
    await until("the packets", () => s.session.stats().received.packets === payloads.length + 3);
    await s.scheduler.advance(1);
    expect(s.dtmf).toEqual([{ digit: "5", method: "rfc4733", durationMs: 60 }]);
    const stats = s.session.stats();
    expect(stats.jitterBuffer).toMatchObject({ lost: 0, played: 3 });
    // Sequence numbers 8..17 expected, 11 packets received (one twice): RFC 3550 A.3's −1, shown as 0.
    expect(stats.cumulativeLost).toBe(0);
  });

  it("reports a key from a SIP INFO dtmf-relay body, and says what is wrong with a bad one", async () => {
    const s = await setup();
    expect(s.session.dtmfRelay("Signal=#\r\nDuration=160\r\n")).toEqual({ digit: "#", durationMs: 160 });
    expect(s.session.dtmfRelay("Signal=Q\r\n")).toEqual({ error: 'Signal "Q" is not a DTMF key' });
    expect(s.dtmf).toEqual([{ digit: "#", method: "sip-info", durationMs: 160 }]);
  });

  it("opens before the SDP answer, sends and takes nothing until started, then runs", async () => {
    const s = await setup({ codec: undefined, remote: undefined });
    expect(s.session.codec).toBeUndefined();
    expect(s.scheduler.pendingCount).toBe(0);
    s.peer.send(
      rtp({ pt: 8, seq: 1, ts: 0, ssrc: 5, payload: Buffer.alloc(160, 0xd5) }),
      s.session.localPort,
    );
    await until("the rejection", () => s.session.stats().counters.rejected === 1);
    s.session.play(new Int16Array(160).fill(500));
    await s.scheduler.advance(0.1);
    expect(s.peer.received).toHaveLength(0);
    expect(s.session.stats()).toMatchObject({ codec: undefined, sendingTo: undefined, sent: { packets: 0 } });
    s.session.start({ codec: "PCMA", remote: { address: "127.0.0.1", port: s.peer.port } });
    expect(() =>
      s.session.start({ codec: "PCMA", remote: { address: "127.0.0.1", port: s.peer.port } }),
    ).toThrow(/started already/);
    await s.scheduler.advance(0.04);
    const packets = (await s.peer.receive(2)).map(readRtp);
    expect(packets.map((p) => [p.pt, p.marker])).toEqual([
      [8, true],
      [8, false],
    ]);
    expect(Math.abs(alawToLinear(packets[0]!.payload[0]!) - 500)).toBeLessThan(20);
    expect(s.session.stats().codec).toBe("PCMA");
  });

  it("closes a session that never started", async () => {
    const s = await setup({ codec: undefined, remote: undefined });
    await s.session.close();
    expect(() => s.session.start({ codec: "PCMU", remote: { address: "127.0.0.1", port: 9 } })).toThrow(
      /closed/,
    );
    expect(s.rtcpPeer.received).toHaveLength(0);
  });

  it("refuses options that cannot work", async () => {
    const pacer = new Pacer(realTimers());
    cleanup.push(() => pacer.stop());
    const base: RtpSessionOptions = {
      address: "127.0.0.1",
      portMin: PORT_MIN,
      portMax: PORT_MAX,
      codec: "PCMU",
      remote: { address: "127.0.0.1", port: 9 },
      pacer,
    };
    await expect(RtpSession.open({ ...base, codec: "G729" as "PCMU" })).rejects.toThrow(/codec/);
    await expect(RtpSession.open({ ...base, telephoneEventPayloadType: 8 })).rejects.toThrow(/96..127/);
    await expect(RtpSession.open({ ...base, remote: { address: "127.0.0.1", port: 0 } })).rejects.toThrow(
      /remote port/,
    );
    await expect(RtpSession.open({ ...base, timeoutSeconds: -1 })).rejects.toThrow(/timeoutSeconds/);
    await expect(RtpSession.open({ ...base, rtcpIntervalSeconds: 0 })).rejects.toThrow(/rtcpIntervalSeconds/);
    await expect(RtpSession.open({ ...base, jitterMs: Number.NaN })).rejects.toThrow(/jitterMs/);
  });

  it("detects in-band keys in received audio when no telephone-event was negotiated", async () => {
    const s = await setup({ telephoneEventPayloadType: undefined });
    // 100 ms of 852 + 1477 Hz ("9") at about −10 dBFS each, then silence, built here.
    const samples = Array.from({ length: 1600 }, (_, i) =>
      i < 800
        ? 10000 * (Math.sin((2 * Math.PI * 852 * i) / 8000) + Math.sin((2 * Math.PI * 1477 * i) / 8000))
        : 0,
    );
    for (let k = 0; k < 10; k++) {
      const payload = Buffer.from(samples.slice(k * 160, k * 160 + 160).map((v) => linearToMulaw(v)));
      s.peer.send(rtp({ pt: 0, seq: k, ts: k * 160, ssrc: 4, payload }), s.session.localPort);
    }
    await until("the audio", () => s.session.stats().received.packets === 10);
    await s.scheduler.advance(0.02 * 16);
    expect(s.dtmf).toEqual([{ digit: "9", method: "inband" }]);
  });

  it("signals an RTP timeout once, measured from the last packet", async () => {
    const s = await setup({ timeoutSeconds: 1 });
    await s.scheduler.advance(0.6);
    s.peer.send(rtp({ pt: 0, seq: 1, ts: 0, ssrc: 5, payload: ulawFrame(0xff) }), s.session.localPort);
    await until("the packet", () => s.session.stats().received.packets === 1);
    await s.scheduler.advance(0.98);
    expect(s.timeouts).toBe(0);
    await s.scheduler.advance(0.1);
    expect(s.timeouts).toBe(1);
    await s.scheduler.advance(2);
    expect(s.timeouts).toBe(1);
  });

  it("sends RTCP SR + SDES, and takes loss, jitter and RTT from the remote's RR", async () => {
    const s = await setup({ rtcpIntervalSeconds: 0.2, cname: "test@host" });
    await s.scheduler.advance(0.2);
    const [sr] = await s.rtcpPeer.receive(1);
    expect(sr![0]).toBe(0x80); // V=2, no report block yet (nothing received)
    expect(sr![1]).toBe(200);
    expect(sr!.readUInt32BE(4)).toBe(s.session.ssrc);
    expect(sr!.readUInt32BE(20)).toBe(10); // sender's packet count
    expect(sr!.readUInt32BE(24)).toBe(1600); // sender's octet count
    const sdes = sr!.subarray(28);
    expect(sdes[1]).toBe(202);
    expect(sdes.subarray(8, 10 + 9).toString("latin1")).toBe("\u0001\u0009test@host");
    // The RR: 1/4 lost, cumulative 3, jitter 80 units, LSR = the SR's middle 32 bits, DLSR 0.
    const lsr = ((sr!.readUInt32BE(8) & 0xffff) << 16) | (sr!.readUInt32BE(12) >>> 16);
    const rr = Buffer.alloc(32);
    rr.writeUInt32BE(0x81c90007, 0);
    rr.writeUInt32BE(77, 4);
    rr.writeUInt32BE(s.session.ssrc, 8);
    rr.writeUInt32BE((64 << 24) | 3, 12);
    rr.writeUInt32BE(500, 16);
    rr.writeUInt32BE(80, 20);
    rr.writeUInt32BE(lsr >>> 0, 24);
    rr.writeUInt32BE(0, 28);
    s.scheduler.clock.set(new Date(s.scheduler.now().getTime() + 40));
    s.rtcpPeer.send(rr, s.session.localPort + 1);
    await until("the RR", () => s.session.stats().rtcp.received === 1);
    const stats = s.session.stats();
    expect(stats.remote).toEqual({ fractionLost: 0.25, cumulativeLost: 3, jitterMs: 10 });
    expect(stats.rttMs).toBeGreaterThan(39.9);
    expect(stats.rttMs).toBeLessThan(40.1);
    // With a packet received, the next SR carries a report block about it.
    s.peer.send(rtp({ pt: 0, seq: 9, ts: 0, ssrc: 0xabc, payload: ulawFrame(0xff) }), s.session.localPort);
    await until("the packet", () => s.session.stats().received.packets === 1);
    await s.scheduler.advance(0.2);
    const [next] = await s.rtcpPeer.receive(1);
    expect(next![0]).toBe(0x81);
    expect(next!.readUInt32BE(28)).toBe(0xabc);
  });

  it("counts malformed datagrams on both ports and keeps working", async () => {
    const s = await setup();
    for (const junk of ["", "x", "\x40\x00\x00\x01aaaaaaaa", "\x83\x00\x00\x01aaaaaaaa"]) {
      s.peer.send(Buffer.from(junk, "latin1"), s.session.localPort);
      s.peer.send(Buffer.from(junk, "latin1"), s.session.localPort + 1);
    }
    s.peer.send(rtp({ pt: 13, seq: 1, ts: 0, ssrc: 5, payload: Buffer.from([0x40]) }), s.session.localPort);
    await until("the junk", () => {
      const c = s.session.stats().counters;
      return c.malformed === 8 && c.unknownPayload === 1;
    });
    await s.scheduler.advance(0.04);
    expect(await s.peer.receive(2)).toHaveLength(2);
    expect(s.session.stats().counters.errors).toBe(0);
  });

  it("sends an RTCP BYE at close and nothing after; close is idempotent", async () => {
    const s = await setup();
    await s.scheduler.advance(0.04);
    await s.peer.receive(2);
    await s.session.close();
    await s.session.close();
    const [bye] = await s.rtcpPeer.receive(1);
    const types: number[] = [];
    for (let at = 0; at < bye!.length; at += (bye!.readUInt16BE(at + 2) + 1) * 4) types.push(bye![at + 1]!);
    expect(types).toEqual([200, 202, 203]);
    await s.scheduler.advance(0.2);
    expect(s.scheduler.pendingCount).toBe(0);
    expect(s.peer.received).toHaveLength(0);
  });

  it("runs on the real clock too", async () => {
    const pacer = new Pacer(realTimers());
    const peer = await Peer.open();
    const session = await RtpSession.open({
      address: "127.0.0.1",
      portMin: PORT_MIN,
      portMax: PORT_MAX,
      codec: "PCMU",
      remote: { address: "127.0.0.1", port: peer.port },
      pacer,
    });
    cleanup.push(
      () => session.close(),
      () => peer.close(),
      () => pacer.stop(),
    );
    const packets = (await peer.receive(10)).map(readRtp);
    expect(packets.map((p) => (p.seq - packets[0]!.seq) & 0xffff)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(packets.map((p) => (p.ts - packets[0]!.ts) >>> 0)).toEqual(
      Array.from({ length: 10 }, (_, i) => 160 * i),
    );
  });
});
