/**
 * Bridging two SIP legs (src/telephony/sip-carrier/bridge.ts), on raw
 * sockets: a caller speaking PCMU calls a PROGRAMMABLE domain whose handler
 * records the call and <Call>s a SIP endpoint that answers PCMA only. Each
 * party sends a tone of its own and hears the other's (transcoded, checked
 * by frequency and level), a key pressed by the caller reaches the endpoint
 * as RFC 4733 events once, the caller's BYE ends the bridge, and the
 * recording has the caller on channel 0 and the endpoint on channel 1.
 */
import dgram from "node:dgram";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Recording_State, Recordings } from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { systemClock } from "../../src/clock.js";
import { calls } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import { type Received, UdpUa } from "../sip/ua.js";
import { createTestClient, newProject, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { newSipDomainId } from "../voice/support.js";
import { mulaw, Phone, type RtpSeen, unmulaw } from "./phone.js";

/** G.711 A-law (ITU-T G.711), written here independently of src/. */
function alaw(sample: number): number {
  let s = sample >> 3;
  let mask = 0xd5;
  if (s < 0) {
    s = -s - 1;
    mask = 0x55;
  }
  const seg = [0x1f, 0x3f, 0x7f, 0xff, 0x1ff, 0x3ff, 0x7ff, 0xfff].findIndex((end) => s <= end);
  if (seg < 0) return 0x7f ^ mask;
  const value = (seg << 4) | (seg < 2 ? (s >> 1) & 0xf : (s >> seg) & 0xf);
  return value ^ mask;
}
function unalaw(byte: number): number {
  const a = byte ^ 0x55;
  const seg = (a & 0x70) >> 4;
  let t = (a & 0x0f) << 4;
  if (seg === 0) t += 8;
  else if (seg === 1) t += 0x108;
  else t = (t + 0x108) << (seg - 1);
  return a & 0x80 ? t : -t;
}

function tone(hz: number, seconds: number, level = 8000): Int16Array {
  return Int16Array.from({ length: seconds * 8000 }, (_, i) =>
    Math.round(level * Math.sin((2 * Math.PI * hz * i) / 8000)),
  );
}

/** Frequency by zero crossings, and RMS, of `s`. */
function analyse(s: ArrayLike<number>): { hz: number; rms: number } {
  let crossings = 0;
  let energy = 0;
  for (let i = 1; i < s.length; i++) {
    if (s[i - 1]! < 0 !== s[i]! < 0) crossings++;
    energy += s[i]! * s[i]!;
  }
  return { hz: crossings / 2 / (s.length / 8000), rms: Math.sqrt(energy / Math.max(1, s.length)) };
}

/** The loudest stretch of `s` of `length` samples (where a tone sits among silence). */
function loudest(s: ArrayLike<number>, length: number): number[] {
  let best = 0;
  let bestAt = 0;
  let sum = 0;
  const a = Array.from(s, Math.abs);
  for (let i = 0; i < a.length; i++) {
    sum += a[i]!;
    if (i >= length) sum -= a[i - length]!;
    if (i >= length - 1 && sum > best) {
      best = sum;
      bestAt = i - length + 1;
    }
  }
  return Array.from(s).slice(bestAt, bestAt + length);
}

/** The channels of a 16-bit PCM WAV. */
function wavChannels(file: Buffer): Int16Array[] {
  const channels = file.readUInt16LE(22);
  let at = 12;
  while (file.toString("ascii", at, at + 4) !== "data") at += 8 + file.readUInt32LE(at + 4);
  const bytes = file.readUInt32LE(at + 4);
  const frames = bytes / 2 / channels;
  const out = Array.from({ length: channels }, () => new Int16Array(frames));
  for (let f = 0; f < frames; f++)
    for (let c = 0; c < channels; c++) out[c]![f] = file.readInt16LE(at + 8 + (f * channels + c) * 2);
  return out;
}

describe.each(testDatabases())("bridged SIP calls on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let port: number;
  let base: string;
  let handler: Receiver;
  const closers: Array<{ close(): void }> = [];

  beforeAll(async () => {
    app = await build({
      config: testConfig({
        SIP_PORT: "0",
        RTP_PORT_MIN: "0",
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
    for (const c of closers) c.close();
    await handler?.close();
    await app?.close();
  });

  /** The called endpoint: a UA on raw UDP answering PCMA (and telephone-event 101) only. */
  async function endpoint() {
    const sip = await UdpUa.open();
    const media = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => media.bind(0, "127.0.0.1", () => resolve()));
    closers.push(sip, media);
    const rtp: RtpSeen[] = [];
    media.on("message", (data, from) =>
      rtp.push({
        version: data[0]! >> 6,
        marker: (data[1]! & 0x80) !== 0,
        payloadType: data[1]! & 0x7f,
        sequence: data.readUInt16BE(2),
        timestamp: data.readUInt32BE(4),
        ssrc: data.readUInt32BE(8),
        payload: data.subarray(12),
        from: from.port,
      }),
    );
    const reply = (request: Received, status: string, body = "") => {
      const to = request.header("To")!;
      const lines = [
        `SIP/2.0 ${status}`,
        ...request.headers("Via").map((v) => `Via: ${v}`),
        `From: ${request.header("From")}`,
        `To: ${to}${to.includes("tag=") ? "" : ";tag=bob1"}`,
        `Call-ID: ${request.header("Call-ID")}`,
        `CSeq: ${request.header("CSeq")}`,
        `Contact: <sip:bob@127.0.0.1:${sip.port}>`,
        ...(body === "" ? [] : ["Content-Type: application/sdp"]),
        `Content-Length: ${Buffer.byteLength(body)}`,
        "",
        body,
      ];
      sip.send(Buffer.from(lines.join("\r\n")), port);
    };
    const sdp = [
      "v=0",
      "o=bob 7 1 IN IP4 127.0.0.1",
      "s=bob",
      "c=IN IP4 127.0.0.1",
      "t=0 0",
      `m=audio ${media.address().port} RTP/AVP 8 101`,
      "a=rtpmap:8 PCMA/8000",
      "a=rtpmap:101 telephone-event/8000",
      "a=fmtp:101 0-16",
      "a=ptime:20",
      "a=sendrecv",
      "",
    ].join("\r\n");
    /** Sends A-law packets of `samples` to `to`, one every 20 ms. */
    const sendAudio = async (to: number, samples: Int16Array) => {
      const start = Date.now();
      for (let i = 0, seq = 7000; i < samples.length; i += 160, seq++) {
        const header = Buffer.alloc(12);
        header[0] = 0x80;
        header[1] = (i === 0 ? 0x80 : 0) | 8;
        header.writeUInt16BE(seq, 2);
        header.writeUInt32BE(90_000 + i, 4);
        header.writeUInt32BE(0xb0b0b0b0, 8);
        media.send(
          Buffer.concat([header, Buffer.from(Array.from(samples.subarray(i, i + 160), alaw))]),
          to,
          "127.0.0.1",
        );
        await new Promise((r) => setTimeout(r, Math.max(0, start + (i + 160) / 8 - Date.now())));
      }
    };
    return { sip, rtp, reply, sdp, sendAudio };
  }

  it("relays both ways between PCMU and PCMA, passes a key on, records both parties, ends at the caller's BYE", async () => {
    const bob = await endpoint();
    const path = `/b${Math.random().toString(36).slice(2)}`;
    handler.handle((req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(
        req.path.startsWith(path)
          ? xml(
              `<RecordCall Trigger="answer"/><Call><Endpoint>sip:bob@127.0.0.1:${bob.sip.port}</Endpoint></Call>`,
            )
          : xml(""),
      );
    });
    const project = await newProject(database.db);
    const d = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
      parent: project,
      sipDomainId: newSipDomainId("br"),
      sipDomain: {
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}${path}`],
        cidrBlocks: [{ cidrBlock: "127.0.0.1/32" }],
      },
    });
    const caller = await Phone.open(port);
    closers.push(caller);
    const uri = `sip:1001@${d.fqdn}`;
    const { branch, cseq } = caller.invite(uri, { body: caller.offer("0 101") });
    // The engine calls bob (the caller may be answered before or after): bob answers with PCMA only.
    const invite = await bob.sip.inbox.next((m) => m.method === "INVITE", 15_000);
    expect(invite.body).toMatch(/m=audio \d+ RTP\/AVP/);
    bob.reply(invite, "180 Ringing");
    bob.reply(invite, "200 OK", bob.sdp);
    await bob.sip.inbox.next((m) => m.method === "ACK", 10_000);
    const bobRtp = Number(/^m=audio (\d+) /m.exec(invite.body)?.[1]);
    const ok = await caller.sip.inbox.next((m) => m.text.includes(branch) && (m.status ?? 0) >= 200, 15_000);
    expect(ok.status).toBe(200);
    caller.learn(ok);
    caller.inDialog("ACK", uri, { cseq });
    const callerRtp = Phone.mediaPort(ok.body);

    // Bridged once the parent's row says so; give it a moment to set up.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const [row] = await database.db.select().from(calls).where(eq(calls.sipCallId, caller.callId));
      if (row?.bridged) break;
      if (Date.now() > deadline) throw new Error("never bridged");
      await new Promise((r) => setTimeout(r, 50));
    }
    const fromCaller = tone(440, 1);
    const fromBob = tone(1000, 1);
    const callerBefore = caller.rtp.length;
    const bobBefore = bob.rtp.length;
    await Promise.all([caller.sendAudio(callerRtp, fromCaller), bob.sendAudio(bobRtp, fromBob)]);
    await new Promise((r) => setTimeout(r, 300));

    // bob hears the caller's 440 Hz as PCMA; the caller hears bob's 1000 Hz as PCMU.
    const toBob = bob.rtp.slice(bobBefore).filter((p) => p.payloadType === 8);
    const toCaller = caller.rtp.slice(callerBefore).filter((p) => p.payloadType === 0);
    const heardByBob = loudest(
      toBob.flatMap((p) => Array.from(p.payload, unalaw)),
      4000,
    );
    const heardByCaller = loudest(
      toCaller.flatMap((p) => Array.from(p.payload, unmulaw)),
      4000,
    );
    expect(analyse(heardByBob).hz).toBeGreaterThan(420);
    expect(analyse(heardByBob).hz).toBeLessThan(460);
    expect(analyse(heardByBob).rms).toBeGreaterThan(4000);
    expect(analyse(heardByCaller).hz).toBeGreaterThan(970);
    expect(analyse(heardByCaller).hz).toBeLessThan(1030);
    expect(analyse(heardByCaller).rms).toBeGreaterThan(4000);
    // Every packet to bob is PCMA or telephone-event; to the caller PCMU or telephone-event.
    expect(bob.rtp.every((p) => p.payloadType === 8 || p.payloadType === 101)).toBe(true);
    expect(caller.rtp.every((p) => p.payloadType === 0 || p.payloadType === 101)).toBe(true);

    // A key: the caller's RFC 4733 press reaches bob as events of key 5, one press.
    caller.sendDigit(callerRtp, "5", 5000 + 8000 * 2, 900);
    const keyDeadline = Date.now() + 5000;
    let events: RtpSeen[] = [];
    while (events.length === 0 || !events.some((e) => (e.payload[1]! & 0x80) !== 0)) {
      if (Date.now() > keyDeadline) throw new Error("no telephone-event reached bob");
      await new Promise((r) => setTimeout(r, 50));
      events = bob.rtp.filter((p) => p.payloadType === 101);
    }
    expect(new Set(events.map((e) => e.payload[0]))).toEqual(new Set([5]));
    expect(new Set(events.map((e) => e.timestamp)).size).toBe(1);

    // The caller hangs up: bob gets a BYE.
    caller.inDialog("BYE", uri);
    const bye = await bob.sip.inbox.next((m) => m.method === "BYE", 10_000);
    bob.reply(bye, "200 OK");

    // The recording: the caller on channel 0, bob on channel 1.
    const [row] = await database.db.select().from(calls).where(eq(calls.sipCallId, caller.callId));
    const recordings = createTestClient(Recordings, database.db, systemClock);
    const parent = `${project}/calls/${row!.id}`;
    const recDeadline = Date.now() + 20_000;
    let rec = (await recordings.listRecordings({ parent })).recordings[0];
    while (rec === undefined || rec.state === Recording_State.PENDING) {
      if (Date.now() > recDeadline) throw new Error("no recording");
      await new Promise((res) => setTimeout(res, 100));
      rec = (await recordings.listRecordings({ parent })).recordings[0];
    }
    expect(rec.state).toBe(Recording_State.SUCCEEDED);
    const full = await recordings.getRecording({ name: rec.name });
    const wav = full.audio.find((a) => a.mimeType === "audio/x-wav")!;
    const res = await fetch(wav.uri.startsWith("http") ? wav.uri : `${base}${wav.uri}`);
    const [ch0, ch1] = wavChannels(Buffer.from(await res.arrayBuffer()));
    expect(ch1).toBeDefined();
    const caller0 = analyse(loudest(ch0!, 4000));
    const bob1 = analyse(loudest(ch1!, 4000));
    expect(caller0.hz).toBeGreaterThan(420);
    expect(caller0.hz).toBeLessThan(460);
    expect(bob1.hz).toBeGreaterThan(970);
    expect(bob1.hz).toBeLessThan(1030);
    expect(bob1.rms).toBeGreaterThan(4000);
    // Both are the parties as sent, give or take G.711: μ-law of the caller on 0.
    expect(Math.abs(caller0.rms - analyse(fromCaller).rms)).toBeLessThan(analyse(fromCaller).rms * 0.1);
    void mulaw;
  }, 60_000);
});
