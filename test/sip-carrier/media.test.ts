/**
 * SIP calls on the full RTP session (src/rtp/session.ts through
 * src/telephony/sip-carrier/call-media.ts), driven by a test phone on raw
 * UDP sockets (./phone.ts) with literal SIP and hand-built RTP:
 * - keys by SIP INFO (application/dtmf-relay, application/dtmf) and by
 *   in-band tones (the phone offered no telephone-event) reach <Input>
 *   (RFC 4733: inbound.test.ts); INFO with another body is 415, a relay
 *   body without a key 400;
 * - <Record> of audio with a packet lost and two reordered: the reordered
 *   ones in place, the lost one concealed as the jitter buffer does (the
 *   previous frame repeated once); stopped by a SIP INFO key;
 * - a remote SSRC change mid-call: the new source's audio recorded whole;
 * - no RTP for RTP_TIMEOUT_SECONDS: BYE, the call FAILED with RTP_TIMEOUT;
 *   not while the caller holds the call, and counted again from the resume;
 * - /metrics shows the calls' RTP counters.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Recording_State, Recordings } from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { systemClock } from "../../src/clock.js";
import { type CallRow, calls } from "../../src/db/schema/index.js";
import { dtmfTone } from "../../src/rtp/dtmf-tone.js";
import { type App, build } from "../../src/server.js";
import { parseWav } from "../recordings/audio.js";
import type { Received } from "../sip/ua.js";
import { createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { framesHeardInOrder, indexOfAll } from "../support/frames.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { newSipDomainId } from "../voice/support.js";
import { mulaw, Phone, unmulaw } from "./phone.js";

/** Seconds without RTP before a call is hung up, here (short: one test waits for it). */
const RTP_TIMEOUT = 3;

/** One RTP packet: version 2, no CSRC, the given fields. */
function rtpPacket(f: { pt?: number; seq: number; ts: number; ssrc: number; payload: Uint8Array }): Buffer {
  const packet = Buffer.alloc(12 + f.payload.length);
  packet[0] = 0x80;
  packet[1] = f.pt ?? 0;
  packet.writeUInt16BE(f.seq & 0xffff, 2);
  packet.writeUInt32BE(f.ts >>> 0, 4);
  packet.writeUInt32BE(f.ssrc >>> 0, 8);
  packet.set(f.payload, 12);
  return packet;
}

/** Deterministic noise, each 160-sample frame unlike the others (a repeated frame shows). */
function noise(frames: number, seed: number): Int16Array {
  let x = seed;
  const out = new Int16Array(frames * 160);
  for (let i = 0; i < out.length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out[i] = ((x >> 8) % 16000) - 8000;
  }
  out[0] = 8000; // never zero: the recording's first non-zero sample is the audio's start
  return out;
}

/** μ-law round trip (what the call can hear of `samples`). */
const g711 = (samples: Int16Array) => Int16Array.from(samples, (x) => unmulaw(mulaw(x)));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(testDatabases())("SIP call media on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let port: number;
  let handler: Receiver;
  let base: string;
  const phones: Phone[] = [];

  beforeAll(async () => {
    app = await build({
      config: testConfig({
        SIP_PORT: "0",
        RTP_PORT_MIN: "0",
        RTP_TIMEOUT_SECONDS: String(RTP_TIMEOUT),
        LOG_LEVEL: "silent",
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
      }),
      db: database.db,
    });
    port = (await app.listenSip()).local("UDP")!.port;
    base = `http://127.0.0.1:${(await app.listen(0)).port}`;
    handler = await startReceiver();
  });

  afterAll(async () => {
    for (const p of phones) p.close();
    await handler?.close();
    await app?.close();
  });

  async function phone(): Promise<Phone> {
    const p = await Phone.open(port);
    phones.push(p);
    return p;
  }

  /** A domain answering `markup` at /{path}, calls from 127.0.0.1 allowed. */
  async function domain(markup: string): Promise<{ fqdn: string; project: string; path: string }> {
    const path = `/m${Math.random().toString(36).slice(2)}`;
    const project = await newProject(database.db);
    const d = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
      parent: project,
      sipDomainId: newSipDomainId("md"),
      sipDomain: {
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}${path}`],
        cidrBlocks: [{ cidrBlock: "127.0.0.1/32" }],
      },
    });
    handler.handle((req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(req.path === path ? xml(markup) : xml(""));
    });
    return { fqdn: d.fqdn, project, path };
  }

  const final = (branch: string) => (m: Received) => m.text.includes(branch) && (m.status ?? 0) >= 200;

  async function ended(callId: string): Promise<CallRow> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const [r] = await database.db.select().from(calls).where(eq(calls.sipCallId, callId));
      if (r !== undefined && ["COMPLETED", "FAILED", "BUSY", "REJECTED", "NOT_ANSWERED"].includes(r.state))
        return r;
      if (Date.now() > deadline) throw new Error(`call ${callId} did not end`);
      await sleep(50);
    }
  }

  /** INVITE (offering `payloads`) → 200 → ACK; the server's RTP port. */
  async function connect(p: Phone, uri: string, payloads = "0 8 101"): Promise<number> {
    const { branch, cseq } = p.invite(uri, { body: p.offer(payloads) });
    const ok = await p.sip.inbox.next(final(branch));
    expect(ok.status).toBe(200);
    p.learn(ok);
    p.inDialog("ACK", uri, { cseq });
    return Phone.mediaPort(ok.body);
  }

  /** An INFO in the dialog; its final response's status. */
  async function info(p: Phone, uri: string, contentType: string, body: string): Promise<Received> {
    const { branch } = p.inDialog("INFO", uri, { contentType, body });
    return p.sip.inbox.next(final(branch));
  }

  /** Sends packets one every 20 ms. */
  async function paced(p: Phone, rtpPort: number, packets: Buffer[]): Promise<void> {
    const start = Date.now();
    for (let i = 0; i < packets.length; i++) {
      p.media.send(packets[i]!, rtpPort, "127.0.0.1");
      const wait = start + (i + 1) * 20 - Date.now();
      if (wait > 0) await sleep(wait);
    }
  }

  /** The call's <Record>ing, decoded from its WAV. */
  async function recorded(project: string, callId: string): Promise<Int16Array> {
    const r = await ended(callId);
    const recordings = createTestClient(Recordings, database.db, systemClock);
    const parent = `${project}/calls/${r.id}`;
    const deadline = Date.now() + 15_000;
    let rec = (await recordings.listRecordings({ parent })).recordings[0];
    while (rec === undefined || rec.state === Recording_State.PENDING) {
      if (Date.now() > deadline) throw new Error("no recording");
      await sleep(50);
      rec = (await recordings.listRecordings({ parent })).recordings[0];
    }
    expect(rec.state).toBe(Recording_State.SUCCEEDED);
    const full = await recordings.getRecording({ name: rec.name });
    const wav = full.audio.find((a) => a.mimeType === "audio/x-wav")!;
    const res = await fetch(wav.uri.startsWith("http") ? wav.uri : `${base}${wav.uri}`);
    expect(res.status).toBe(200);
    return parseWav(Buffer.from(await res.arrayBuffer())).firstChannel;
  }

  it("takes keys from SIP INFO (dtmf-relay and dtmf) for <Input>; other INFO bodies 415, a relay without a key 400", async () => {
    const { fqdn } = await domain('<Input NumDigits="3" TimeoutSeconds="10" NextUri="digits"/>');
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    await connect(p, uri);
    await sleep(200);
    expect((await info(p, uri, "application/dtmf-relay", "Signal=1\r\nDuration=160\r\n")).status).toBe(200);
    expect((await info(p, uri, "application/json", '{"digit":"9"}')).status).toBe(415);
    const bad = await info(p, uri, "application/dtmf-relay", "Signal=X\r\n");
    expect(bad.status).toBe(400);
    expect(bad.reason).toContain("Signal");
    expect((await info(p, uri, "application/dtmf", "2")).status).toBe(200);
    expect((await info(p, uri, "application/dtmf-relay", "signal = 3\n")).status).toBe(200);
    const bye = await p.sip.inbox.next((m) => m.method === "BYE", 15_000);
    p.ok(bye);
    const next = handler.requests.find((r) => r.path.endsWith("/digits") && r.body.includes('"123"'));
    expect(next, "no request to the NextUri with 123").toBeDefined();
    expect(JSON.parse(next!.body).parameters).toMatchObject({ digits: "123" });
  });

  it("detects in-band DTMF tones for <Input> when the phone offered no telephone-event", async () => {
    const { fqdn } = await domain('<Input NumDigits="3" TimeoutSeconds="10" NextUri="tones"/>');
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const rtpPort = await connect(p, uri, "0 8");
    await sleep(200);
    const tones = ["5", "7", "9"].map((d) => dtmfTone(d, { durationMs: 120, pauseMs: 80 }));
    const audio = new Int16Array(tones.reduce((n, t) => n + t.length, 0) + 1600);
    let at = 0;
    for (const t of tones) {
      audio.set(t, at);
      at += t.length;
    }
    const packets: Buffer[] = [];
    for (let i = 0; i * 160 < audio.length; i++) {
      const frame = audio.subarray(i * 160, i * 160 + 160);
      packets.push(
        rtpPacket({ seq: 300 + i, ts: 9000 + 160 * i, ssrc: 0x51, payload: Uint8Array.from(frame, mulaw) }),
      );
    }
    await paced(p, rtpPort, packets);
    const bye = await p.sip.inbox.next((m) => m.method === "BYE", 15_000);
    p.ok(bye);
    const next = handler.requests.find((r) => r.path.endsWith("/tones") && r.body.includes('"579"'));
    expect(next, "no request to the NextUri with 579").toBeDefined();
  });

  it("records through loss and reordering: reordered packets in place, a lost one concealed; stopped by an INFO key", async () => {
    const { fqdn, project } = await domain('<Record PlayBeep="false" StopKey="#" MaxDurationSeconds="20"/>');
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const rtpPort = await connect(p, uri);
    await sleep(300);
    const sent = noise(50, 7);
    const frames = Array.from({ length: 50 }, (_, i) =>
      rtpPacket({
        seq: 65500 + i, // wraps past 65535 on the way
        ts: 0xffff_f000 + 160 * i,
        ssrc: 0xa1,
        payload: Uint8Array.from(sent.subarray(i * 160, i * 160 + 160), mulaw),
      }),
    );
    // Frame 10 never sent; 21 before 20.
    const order = frames.filter((_, i) => i !== 10);
    const at20 = order.indexOf(frames[20]!);
    order.splice(at20, 2, frames[21]!, frames[20]!);
    await paced(p, rtpPort, order);
    await sleep(300);
    expect((await info(p, uri, "application/dtmf-relay", "Signal=#\r\nDuration=100\r\n")).status).toBe(200);
    const bye = await p.sip.inbox.next((m) => m.method === "BYE", 15_000);
    p.ok(bye);
    const samples = await recorded(project, p.callId);
    const want = g711(sent);
    // The lost frame 10 is frame 9 repeated (the jitter buffer's concealment).
    want.set(want.subarray(9 * 160, 10 * 160), 10 * 160);
    // Where loss and reordering were, exact: frames 8-12 with 9 in 10's place, and 18-23 with 20
    // and 21 back in order.
    expect(indexOfAll(samples, want.subarray(8 * 160, 13 * 160))).toBeGreaterThanOrEqual(0);
    expect(indexOfAll(samples, want.subarray(18 * 160, 24 * 160))).toBeGreaterThanOrEqual(0);
    // The rest, across the wrap of the sequence number (frame 36) and of the timestamp, counted
    // frame by frame, exact and in order, at least 45 of 50 (test/support/frames.ts): the test's
    // phone shares the server's event loop, and a stall lets the buffer run dry and play silence
    // between two frames.
    expect(framesHeardInOrder(samples, want)).toBeGreaterThanOrEqual(45);
  });

  it("records across a remote SSRC change: the old source's audio up to its last buffered frames, then the new one's", async () => {
    const { fqdn, project } = await domain('<Record PlayBeep="false" StopKey="#" MaxDurationSeconds="20"/>');
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const rtpPort = await connect(p, uri);
    await sleep(300);
    const a = noise(25, 11);
    const b = noise(25, 23);
    const packets = [
      ...Array.from({ length: 25 }, (_, i) =>
        rtpPacket({
          seq: 100 + i,
          ts: 1000 + 160 * i,
          ssrc: 0xaaaa,
          payload: Uint8Array.from(a.subarray(i * 160, i * 160 + 160), mulaw),
        }),
      ),
      ...Array.from({ length: 25 }, (_, i) =>
        rtpPacket({
          seq: 40_000 + i,
          ts: 777_777 + 160 * i,
          ssrc: 0xbbbb,
          payload: Uint8Array.from(b.subarray(i * 160, i * 160 + 160), mulaw),
        }),
      ),
    ];
    await paced(p, rtpPort, packets);
    await sleep(300);
    expect((await info(p, uri, "application/dtmf", "#")).status).toBe(200);
    const bye = await p.sip.inbox.next((m) => m.method === "BYE", 15_000);
    p.ok(bye);
    const samples = await recorded(project, p.callId);
    // The new SSRC flushes the jitter buffer (src/rtp/jitter-buffer.ts): at most its depth (3 frames)
    // of A is not played, and all of B follows. Counted frame by frame, exact and in order, at least
    // 42 of the 47 (test/support/frames.ts): the test's phone shares the server's event loop, and a
    // stall lets the buffer run dry and play silence between two frames. A B dropped at the change
    // would leave at most A's 22.
    const ga = g711(a);
    const gb = g711(b);
    const want = new Int16Array(ga.length - 3 * 160 + gb.length);
    want.set(ga.subarray(0, 22 * 160));
    want.set(gb, 22 * 160);
    expect(framesHeardInOrder(samples, want)).toBeGreaterThanOrEqual(42);
  });

  it("suspends the RTP timeout while the caller holds the call, and counts again from the resume", async () => {
    const { fqdn } = await domain('<Wait Seconds="60"/>');
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    await connect(p, uri);
    const reinvite = async (direction: string, version: number) => {
      const { branch, cseq } = p.inDialog("INVITE", uri, { body: p.offer("0 8 101", direction, version) });
      expect((await p.sip.inbox.next(final(branch))).status).toBe(200);
      p.inDialog("ACK", uri, { cseq });
    };
    await reinvite("sendonly", 2);
    await sleep(300); // packets already sent may still arrive
    const heardBefore = p.rtp.length;
    // Held, with no RTP from the caller, for longer than the timeout: the call goes on, and nothing is sent.
    await sleep((RTP_TIMEOUT + 2) * 1000);
    const [held] = await database.db.select().from(calls).where(eq(calls.sipCallId, p.callId));
    expect(held?.state).toBe("IN_PROGRESS");
    expect(p.sip.inbox.pending.some((m) => m.method === "BYE")).toBe(false);
    expect(p.rtp.length).toBe(heardBefore);
    await reinvite("sendrecv", 3);
    const bye = await p.sip.inbox.next((m) => m.method === "BYE", (RTP_TIMEOUT + 15) * 1000);
    p.ok(bye);
    const r = await ended(p.callId);
    expect(r.state).toBe("FAILED");
    expect(r.errorCode).toBe("RTP_TIMEOUT");
    // Resumed, we send again.
    expect(p.rtp.length).toBeGreaterThan(heardBefore);
  });

  it("hangs up a call whose RTP stops (RTP_TIMEOUT_SECONDS): BYE, FAILED with RTP_TIMEOUT; /metrics shows the RTP counters", async () => {
    const { fqdn } = await domain('<Wait Seconds="60"/>');
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const rtpPort = await connect(p, uri);
    // Half a second of audio, then nothing.
    await paced(
      p,
      rtpPort,
      Array.from({ length: 25 }, (_, i) =>
        rtpPacket({ seq: i, ts: 160 * i, ssrc: 0xcc, payload: Uint8Array.from(noise(1, i + 1), mulaw) }),
      ),
    );
    const bye = await p.sip.inbox.next((m) => m.method === "BYE", (RTP_TIMEOUT + 15) * 1000);
    p.ok(bye);
    const r = await ended(p.callId);
    expect(r.state).toBe("FAILED");
    expect(r.errorCode).toBe("RTP_TIMEOUT");
    // The server's RTP reached the phone meanwhile (silence: nothing was said).
    expect(p.rtp.length).toBeGreaterThan(0);

    const res = await fetch(`${base}/metrics`, {
      headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` },
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const value = (line: RegExp) => Number(line.exec(text)?.[1] ?? Number.NaN);
    expect(value(/^switchboard_rtp_packets_total\{direction="received"\} (\d+)/m)).toBeGreaterThanOrEqual(25);
    expect(value(/^switchboard_rtp_packets_total\{direction="sent"\} (\d+)/m)).toBeGreaterThan(0);
    expect(value(/^switchboard_rtp_timeouts_total (\d+)/m)).toBeGreaterThanOrEqual(1);
    expect(value(/^switchboard_rtp_calls_total (\d+)/m)).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^switchboard_rtp_call_jitter_ms_count\{source="local"\} \d+/m);
    expect(text).toMatch(/^switchboard_rtp_call_loss_ratio_bucket\{le="0",source="local"\} \d+/m);
    expect(text).not.toMatch(/switchboard_rtp_[a-z_]+\{[^}]*call/);
  });
});
