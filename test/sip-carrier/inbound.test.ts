/**
 * Real calls in over SIP (the SipCarrier behind the SIP edge of the real
 * app: build() + listenSip() on free ports): a raw-socket phone calls a
 * PROGRAMMABLE domain whose handler is a real local HTTP server. It gets
 * 100/180/200 with an SDP answer, ACKs, hears the `<Say>` as paced G.711
 * RTP, and is hung up on with BYE; the Call reads back transport SIP,
 * sipCallId = the INVITE's Call-ID, COMPLETED. Plus the refusals (DISABLED
 * 403, no common codec 488), CANCEL → 487, the caller's BYE, a re-INVITE
 * hold/resume that keeps the call, digest challenge on a domain with users,
 * and the caller's audio captured by `<Record>`.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Call_State, Call_Transport, Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { Recording_State, Recordings } from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipInfoService } from "../../gen/enfonica/voice/v1beta1/sip_info_pb.js";
import { SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { systemClock } from "../../src/clock.js";
import { type CallRow, calls } from "../../src/db/schema/index.js";
import { sharedSpeech } from "../../src/media/speech/index.js";
import { type App, build } from "../../src/server.js";
import { parseWav } from "../recordings/audio.js";
import type { Received } from "../sip/ua.js";
import { connectClient } from "../streams/clients.js";
import { createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { framesHeardInOrder } from "../support/frames.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { newSipDomainId } from "../voice/support.js";
import { digestAnswer, mulaw, Phone, spokenRun, unmulaw } from "./phone.js";

const BASE = "sip.switchboard.local";

describe.each(testDatabases())("inbound SIP calls on $name", (backend) => {
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
  async function domain(
    markup: string,
    options: { mode?: Mode; user?: boolean } = {},
  ): Promise<{ fqdn: string; project: string; name: string }> {
    const path = `/m${Math.random().toString(36).slice(2)}`;
    const project = await newProject(database.db);
    const d = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
      parent: project,
      sipDomainId: newSipDomainId("sc"),
      sipDomain: {
        callTerminationMode: options.mode ?? Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}${path}`],
        cidrBlocks: [{ cidrBlock: "127.0.0.1/32" }],
      },
    });
    if (options.user) {
      await createTestClient(SipUsers, database.db, systemClock).createSipUser({
        parent: d.name,
        sipUserId: "alice",
        sipUser: { username: "alice", password: "s3cret-pass" },
      });
    }
    handler.handle((req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(req.path.startsWith(path) ? xml(markup) : xml(""));
    });
    return { fqdn: d.fqdn, project, name: d.name };
  }

  const final = (branch: string) => (m: Received) => m.text.includes(branch) && (m.status ?? 0) >= 200;

  /** The call's row once it is ended (`done`), or in `state`, or as soon as it exists. */
  async function row(callId: string, done: boolean | string = false): Promise<CallRow> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const [r] = await database.db.select().from(calls).where(eq(calls.sipCallId, callId));
      const ended = ["COMPLETED", "FAILED", "BUSY", "REJECTED", "NOT_ANSWERED"];
      if (r !== undefined && (done === false || (done === true ? ended.includes(r.state) : r.state === done)))
        return r;
      if (Date.now() > deadline) throw new Error(`call ${callId} not ${done === false ? "found" : done}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** INVITE → 100, 180, 200 (with SDP) → ACK. */
  async function connect(p: Phone, uri: string): Promise<{ ok: Received; rtpPort: number }> {
    const { branch, cseq } = p.invite(uri);
    expect((await p.sip.inbox.next((m) => m.text.includes(branch) && m.status === 100)).status).toBe(100);
    const ringing = await p.sip.inbox.next((m) => m.text.includes(branch) && m.status === 180);
    expect(ringing.reason).toBe("Ringing");
    const ok = await p.sip.inbox.next(final(branch));
    expect(ok.status).toBe(200);
    expect(ok.header("Content-Type")).toBe("application/sdp");
    p.learn(ok);
    p.inDialog("ACK", uri, { cseq });
    return { ok, rtpPort: Phone.mediaPort(ok.body) };
  }

  it("answers a PROGRAMMABLE call, says <Say> over RTP and hangs up with BYE", async () => {
    const { fqdn, project } = await domain("<Say>Hello there my friend</Say>");
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const { ok, rtpPort } = await connect(p, uri);
    expect(ok.body).toMatch(/^m=audio \d+ RTP\/AVP 0 101\r$/m);
    expect(ok.body).toMatch(/^c=IN IP4 127\.0\.0\.1\r$/m);
    expect(rtpPort).toBeGreaterThan(0);

    const bye = await p.sip.inbox.next((m) => m.method === "BYE", 15_000);
    p.ok(bye);
    // The speech engine's audio of the text (the same cached samples the
    // call said), in packets of 20 ms, the last one padded. The session
    // (src/rtp/session.ts) sends RTP for the whole call, silence when
    // nothing is said, so the speech is one run among silent packets, and
    // one talkspurt: the marker is on the call's first packet only.
    const spoken = await sharedSpeech().synthesize("Hello there my friend");
    const packets = p.rtp;
    const first = spokenRun(packets, Buffer.from(Array.from(spoken, (x) => mulaw(x))), 0xff);
    expect(packets.length).toBeGreaterThanOrEqual(first + Math.ceil(spoken.length / 160));
    expect(new Set(packets.map((x) => x.from))).toEqual(new Set([rtpPort]));
    expect(packets.every((x) => x.version === 2 && x.payloadType === 0 && x.payload.length === 160)).toBe(
      true,
    );
    expect(new Set(packets.map((x) => x.ssrc)).size).toBe(1);
    expect(packets[0]!.marker).toBe(true);
    expect(packets.slice(1).some((x) => x.marker)).toBe(false);
    for (let i = 1; i < packets.length; i++) {
      expect((packets[i]!.sequence - packets[i - 1]!.sequence) & 0xffff).toBe(1);
      expect((packets[i]!.timestamp - packets[i - 1]!.timestamp) >>> 0).toBe(160);
    }
    const heard = packets.slice(first).flatMap((x) => Array.from(x.payload, (b) => unmulaw(b)));
    expect(heard.slice(0, spoken.length)).toEqual(Array.from(spoken, (x) => unmulaw(mulaw(x))));
    expect(Math.max(...heard.map(Math.abs))).toBeGreaterThan(5000);

    const r = await row(p.callId, true);
    const call = await createTestClient(Calls, database.db, systemClock).getCall({
      name: `${project}/calls/${r.id}`,
    });
    expect(call.transport).toBe(Call_Transport.SIP);
    expect(call.sipCallId).toBe(p.callId);
    expect(call.state).toBe(Call_State.COMPLETED);
    expect(call.to).toBe(`sip:1001@${fqdn}`);
    expect(call.direction).toBeDefined();

    // GetSipInfo: the real dialogue, as captured by the edge.
    const sipInfo = createTestClient(SipInfoService, database.db, systemClock);
    const deadline = Date.now() + 15_000;
    let methods: string[] = [];
    while (!methods.includes("BYE")) {
      if (Date.now() > deadline) throw new Error(`dialogue incomplete: ${methods.join(" ")}`);
      await new Promise((r) => setTimeout(r, 100));
      const info = await sipInfo.getSipInfo({ name: `${call.name}/sipInfo` });
      methods = info.messages.map((m) => m.method || m.requestLine.split(" ")[0] || "");
      if (methods.includes("BYE")) {
        expect(info.sipCallId).toBe(p.callId);
        expect(info.messages[0]!.data).toContain(`Call-ID: ${p.callId}`);
        expect(info.messages.some((m) => m.data.startsWith("SIP/2.0 180 Ringing"))).toBe(true);
      }
    }
  });

  it("refuses a DISABLED domain with 403 and records no call", async () => {
    const { fqdn } = await domain("<Say>never</Say>", { mode: Mode.TERMINATION_MODE_DISABLED });
    const p = await phone();
    const { branch } = p.invite(`sip:1001@${fqdn}`);
    const res = await p.sip.inbox.next(final(branch));
    expect(res.status).toBe(403);
    expect(res.reason).toContain("TERMINATION_DISABLED");
    expect(await database.db.select().from(calls).where(eq(calls.sipCallId, p.callId))).toEqual([]);
  });

  it("acts at once on a change to the domain or its users that this replica made (no cache delay)", async () => {
    const { fqdn, name } = await domain("<Say>never</Say>", { mode: Mode.TERMINATION_MODE_DISABLED });
    const users = createTestClient(SipUsers, database.db, systemClock);
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const attempt = async () => {
      const { branch, cseq } = p.invite(uri);
      const res = await p.sip.inbox.next(final(branch));
      if ((res.status ?? 0) >= 300) p.inDialog("ACK", uri, { cseq });
      return res;
    };
    // Read once: the domain and "no users" are remembered.
    expect((await attempt()).reason).toContain("TERMINATION_DISABLED");
    // A user created: the next INVITE is challenged.
    const alice = await users.createSipUser({
      parent: name,
      sipUserId: "alice",
      sipUser: { username: "alice", password: "s3cret-pass" },
    });
    expect((await attempt()).status).toBe(401);
    // The user deleted: no challenge any more.
    await users.deleteSipUser({ name: alice.name });
    expect((await attempt()).reason).toContain("TERMINATION_DISABLED");
    // The domain deleted: 404 at once.
    await createTestClient(SipDomains, database.db, systemClock).deleteSipDomain({ name });
    const gone = await attempt();
    expect(gone.status).toBe(404);
    expect(gone.reason).toContain("DOMAIN_DELETED");
  });

  it("refuses a PSTN_TRUNK domain with 503 while no carrier trunk is enabled, and records no call", async () => {
    const { fqdn } = await domain("<Say>never</Say>", { mode: Mode.PSTN_TRUNK });
    const p = await phone();
    const { branch } = p.invite(`sip:+61491570156@${fqdn}`);
    const res = await p.sip.inbox.next(final(branch));
    expect(res.status).toBe(503);
    expect(res.reason).toBe("Service Unavailable (No Carrier Trunk)");
    expect(await database.db.select().from(calls).where(eq(calls.sipCallId, p.callId))).toEqual([]);
  });

  it("refuses an offer with no codec in common with 488", async () => {
    const { fqdn } = await domain("<Say>never</Say>");
    const p = await phone();
    const { branch } = p.invite(`sip:1001@${fqdn}`, { body: p.offer("9") });
    expect((await p.sip.inbox.next(final(branch))).status).toBe(488);
  });

  it("refuses an unknown domain with 404", async () => {
    const p = await phone();
    const { branch } = p.invite(`sip:1001@nosuchdomain-x1.${BASE}`);
    const res = await p.sip.inbox.next(final(branch));
    expect(res.status).toBe(404);
    expect(res.reason).toContain("DOMAIN_NOT_FOUND");
  });

  it("ends the call when the caller CANCELs before the answer: 487", async () => {
    // The handler takes its time: the call rings meanwhile.
    const { fqdn } = await domain("<Say>late</Say>");
    handler.handle((_req, res) => {
      setTimeout(() => {
        res.setHeader("content-type", "application/xml");
        res.end(xml("<Say>late</Say>"));
      }, 3000);
    });
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const { branch, cseq } = p.invite(uri);
    await p.sip.inbox.next((m) => m.text.includes(branch) && m.status === 180);
    p.cancel(uri, branch, cseq);
    expect(
      (await p.sip.inbox.next((m) => m.status === 200 && /CANCEL/.test(m.header("CSeq") ?? ""))).status,
    ).toBe(200);
    expect((await p.sip.inbox.next(final(branch))).status).toBe(487);
    const r = await row(p.callId, true);
    expect(r.state).toBe("COMPLETED");
    expect(r.answerTime).toBeNull();
  });

  it("ends the call COMPLETED when the caller hangs up with BYE", async () => {
    const { fqdn } = await domain(
      "<Say>one two three four five six seven eight nine ten eleven twelve</Say>",
    );
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    await connect(p, uri);
    await new Promise((r) => setTimeout(r, 300));
    const { branch } = p.inDialog("BYE", uri);
    expect((await p.sip.inbox.next(final(branch))).status).toBe(200);
    const r = await row(p.callId, true);
    expect(r.state).toBe("COMPLETED");
    expect(r.endedBy).toBe("REMOTE");
    expect(r.answerTime).not.toBeNull();
  });

  it("answers a re-INVITE (hold, resume) with the same media and keeps the call", async () => {
    const { fqdn } = await domain(
      "<Say>one two three four five six seven eight nine ten eleven twelve</Say>",
    );
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const { rtpPort } = await connect(p, uri);
    for (const [direction, version, answer] of [
      ["sendonly", 2, "recvonly"],
      ["sendrecv", 3, "sendrecv"],
    ] as const) {
      const { branch, cseq } = p.inDialog("INVITE", uri, { body: p.offer("0 8 101", direction, version) });
      const ok = await p.sip.inbox.next(final(branch));
      expect(ok.status).toBe(200);
      expect(Phone.mediaPort(ok.body)).toBe(rtpPort);
      expect(ok.body).toContain(`a=${answer}`);
      p.inDialog("ACK", uri, { cseq });
    }
    expect((await row(p.callId, "IN_PROGRESS")).state).toBe("IN_PROGRESS");
    const { branch } = p.inDialog("BYE", uri);
    expect((await p.sip.inbox.next(final(branch))).status).toBe(200);
    expect((await row(p.callId, true)).state).toBe("COMPLETED");
  });

  it("challenges an INVITE to a domain with users, then takes the authenticated call", async () => {
    const { fqdn } = await domain("<Say>welcome</Say>", { user: true });
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const first = p.invite(uri);
    const challenge = await p.sip.inbox.next(final(first.branch));
    expect(challenge.status).toBe(401);
    const offered = challenge.headers("WWW-Authenticate");
    expect(offered.some((c) => c.includes("algorithm=SHA-256"))).toBe(true);
    expect(offered.some((c) => c.includes("algorithm=MD5"))).toBe(true);
    p.inDialog("ACK", uri, { cseq: first.cseq });

    const wrong = p.invite(uri, {
      authorization: digestAnswer(offered[0]!, "INVITE", "alice", "wrong", uri),
    });
    expect((await p.sip.inbox.next(final(wrong.branch))).status).toBe(401);

    const good = p.invite(uri, {
      authorization: digestAnswer(offered[0]!, "INVITE", "alice", "s3cret-pass", uri),
    });
    await p.sip.inbox.next((m) => m.text.includes(good.branch) && m.status === 180);
    const ok = await p.sip.inbox.next(final(good.branch));
    expect(ok.status).toBe(200);
    p.learn(ok);
    p.inDialog("ACK", uri, { cseq: good.cseq });
    const bye = await p.sip.inbox.next((m) => m.method === "BYE", 15_000);
    p.ok(bye);
    const r = await row(p.callId, true);
    expect(r.state).toBe("COMPLETED");
    expect(r.from).toBe("sip:alice@127.0.0.1");
  });

  it("refuses an authenticated INVITE whose From is another of the domain's users (403, no call); any other name goes on", async () => {
    const { fqdn, name } = await domain("<Say>welcome</Say>", { user: true });
    await createTestClient(SipUsers, database.db, systemClock).createSipUser({
      parent: name,
      sipUserId: "bob",
      sipUser: { username: "bob", password: "bobs-own-pass", disabled: true },
    });
    const uri = `sip:1001@${fqdn}`;
    /** The final answer to alice's credentials with `from` as the caller. */
    const attempt = async (from: string) => {
      const p = await phone();
      const first = p.invite(uri, { from });
      const challenge = await p.sip.inbox.next(final(first.branch));
      expect(challenge.status).toBe(401);
      p.inDialog("ACK", uri, { cseq: first.cseq });
      const answered = p.invite(uri, {
        from,
        authorization: digestAnswer(
          challenge.headers("WWW-Authenticate")[0]!,
          "INVITE",
          "alice",
          "s3cret-pass",
          uri,
        ),
      });
      const res = await p.sip.inbox.next(final(answered.branch));
      if (res.status === 200) {
        p.learn(res);
        p.inDialog("ACK", uri, { cseq: answered.cseq });
        p.inDialog("BYE", uri);
      } else {
        p.inDialog("ACK", uri, { cseq: answered.cseq });
      }
      return { res, callId: p.callId };
    };
    // bob is a user of the domain (disabled, even): alice may not call as bob.
    const bob = await attempt(`sip:bob@${fqdn}`);
    expect(bob.res.status).toBe(403);
    expect(bob.res.reason).toBe("Forbidden (From Is Another User)");
    expect(await database.db.select().from(calls).where(eq(calls.sipCallId, bob.callId))).toEqual([]);
    // Itself, a PBX's extension (no user of the domain), a number, anonymous.
    const others = [
      `sip:alice@${fqdn}`,
      "sip:1001@192.0.2.10",
      "sip:+61255500001@10.1.2.3",
      "sip:anonymous@anonymous.invalid",
    ];
    for (const from of others) {
      const { res, callId } = await attempt(from);
      expect([from, res.status]).toEqual([from, 200]);
      expect((await row(callId, true)).state).toBe("COMPLETED");
    }
  });

  it("records what the caller sends (<Record>, stopped by an RFC 4733 key): the audio decoded as sent", async () => {
    const { fqdn, project } = await domain('<Record PlayBeep="false" StopKey="#" MaxDurationSeconds="20"/>');
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const { rtpPort } = await connect(p, uri);
    await new Promise((r) => setTimeout(r, 500));
    // One second of a 500 Hz tone, starting at its peak (no zero sample to hide the start).
    const sent = Int16Array.from({ length: 8000 }, (_, i) =>
      Math.round(12000 * Math.cos((2 * Math.PI * 500 * i) / 8000)),
    );
    await p.sendAudio(rtpPort, sent);
    await new Promise((r) => setTimeout(r, 200));
    p.sendDigit(rtpPort, "#", 5000 + 8000 + 1600, 500);
    const bye = await p.sip.inbox.next((m) => m.method === "BYE", 15_000);
    p.ok(bye);
    const r = await row(p.callId, true);
    expect(r.state).toBe("COMPLETED");

    const recordings = createTestClient(Recordings, database.db, systemClock);
    const deadline = Date.now() + 15_000;
    let rec = (await recordings.listRecordings({ parent: `${project}/calls/${r.id}` })).recordings[0];
    while (rec === undefined || rec.state === Recording_State.PENDING) {
      if (Date.now() > deadline) throw new Error("no recording");
      await new Promise((res) => setTimeout(res, 50));
      rec = (await recordings.listRecordings({ parent: `${project}/calls/${r.id}` })).recordings[0];
    }
    expect(rec.state).toBe(Recording_State.SUCCEEDED);
    const full = await recordings.getRecording({ name: rec.name });
    const wav = full.audio.find((a) => a.mimeType === "audio/x-wav")!;
    const res = await fetch(wav.uri.startsWith("http") ? wav.uri : `${base}${wav.uri}`);
    expect(res.status).toBe(200);
    const samples = parseWav(Buffer.from(await res.arrayBuffer())).firstChannel;
    const start = samples.findIndex((x) => x !== 0);
    expect(start).toBeGreaterThanOrEqual(0);
    // The tone decoded as sent, in order: at least 45 of its 50 frames (the jitter
    // buffer may play silence between two of them on a stalled event loop).
    const decoded = Int16Array.from(sent, (x) => unmulaw(mulaw(x)));
    expect(framesHeardInOrder(samples.subarray(start), decoded)).toBeGreaterThanOrEqual(45);
    expect(Array.from(samples.subarray(start, start + 160))).toEqual(Array.from(decoded.subarray(0, 160)));
  });

  it("collects RFC 4733 keys for <Input>, each press once", async () => {
    const { fqdn } = await domain('<Input NumDigits="3" TimeoutSeconds="10" NextUri="digits"/>');
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const { rtpPort } = await connect(p, uri);
    await new Promise((r) => setTimeout(r, 300));
    // Each key: a start packet and its end sent three times (one timestamp): one press.
    p.sendDigit(rtpPort, "4", 1000, 10);
    p.sendDigit(rtpPort, "2", 2000, 20);
    p.sendDigit(rtpPort, "*", 3000, 30);
    const bye = await p.sip.inbox.next((m) => m.method === "BYE", 15_000);
    p.ok(bye);
    const next = handler.requests.find((r) => r.path.endsWith("/digits"));
    expect(next, "no request to the NextUri").toBeDefined();
    expect(JSON.parse(next!.body).parameters).toMatchObject({ digits: "42*" });
  });

  it("forks the call's media both ways for <Stream>: the caller heard by the bot, the bot by the caller", async () => {
    const id = `bot-${Math.random().toString(36).slice(2)}`;
    const { fqdn, project } = await domain(`<Stream Name="${id}" TimeoutSeconds="10"/>`);
    const client = connectClient(base);
    const streams = app.engine.streams.size;
    const stream = client.open(TEST_OPERATOR_TOKEN);
    stream.send({ setup: { stream: `${project}/streams/${id}`, encoding: "MULAW", sampleRateHertz: 8000 } });
    for (let i = 0; i < 1000 && app.engine.streams.size === streams && !stream.finished; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    const p = await phone();
    const uri = `sip:1001@${fqdn}`;
    const { rtpPort } = await connect(p, uri);
    for (let i = 0; i < 1000 && !stream.events.some((e) => e.kind === "callConnected"); i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(stream.events.some((e) => e.kind === "callConnected")).toBe(true);
    await new Promise((r) => setTimeout(r, 100));

    // The bot speaks: half a second of a 1 kHz tone, as μ-law.
    const botSays = Uint8Array.from({ length: 4000 }, (_, i) =>
      mulaw(Math.round(9000 * Math.sin((2 * Math.PI * 1000 * i) / 8000 + 0.3))),
    );
    stream.send({ input: { audio: botSays } });
    // The caller speaks: one second of a 500 Hz tone.
    const callerSays = Int16Array.from({ length: 8000 }, (_, i) =>
      Math.round(12000 * Math.cos((2 * Math.PI * 500 * i) / 8000)),
    );
    await p.sendAudio(rtpPort, callerSays);
    await new Promise((r) => setTimeout(r, 500));
    const { branch } = p.inDialog("BYE", uri);
    expect((await p.sip.inbox.next(final(branch))).status).toBe(200);
    await stream.done;
    client.close();

    const heardByBot = Buffer.concat(
      stream.events.flatMap((e) => (e.kind === "outputAudio" ? [e.audio] : [])),
    );
    // Exact frames, in order: at least 45 of the caller's 50 reached the bot (its audio
    // crossed the jitter buffer, which may play silence between two of them on a
    // stalled event loop), and all 25 of the bot's reached the caller (paced out whole).
    const want = Buffer.from(Array.from(callerSays, mulaw));
    expect(framesHeardInOrder(heardByBot, want)).toBeGreaterThanOrEqual(45);
    const heardByCaller = Buffer.concat(p.rtp.map((x) => x.payload));
    expect(heardByCaller.indexOf(Buffer.from(botSays))).toBeGreaterThanOrEqual(0);
  });
});
