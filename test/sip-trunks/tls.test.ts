/**
 * A carrier trunk over TLS (issue 27), on the real app against a fake trunk
 * listening with node:tls on 127.0.0.1, its certificate signed by a CA made
 * in the test (../support/tls-ca.ts) that the edge trusts through
 * SIP_TLS_CA_FILE. A SIP caller's markup `<Call>`s a number: the INVITE
 * reaches the trunk over TLS (`transport=tls` in the Request-URI, a TLS
 * Via), its 401 is answered, its 200 bridges the legs (the trunk's RTP
 * socket hears the caller), and the caller's BYE reaches the trunk on the
 * same TLS connection. A trunk whose certificate no trusted CA signed gets
 * no INVITE (the handshake fails) and the child call fails.
 */
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipTrunk_Transport, SipTrunks } from "../../gen/switchboard/admin/v1/sip_trunks_pb.js";
import { systemClock } from "../../src/clock.js";
import { type CallRow, calls } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import type { Received } from "../sip/ua.js";
import { Phone } from "../sip-carrier/phone.js";
import { createTestClient, newProject, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { makeTestPki, type TestPki } from "../support/tls-ca.js";
import { newSipDomainId } from "../voice/support.js";
import { sipResponse, streamTrunk } from "./peer.js";

const FAR_NUMBER = "+61491570157";
const md5 = (t: string) => createHash("md5").update(t).digest("hex");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isInvite = (m: Received) => m.method === "INVITE";

describe.each(testDatabases())("a carrier trunk over TLS on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let sipPort: number;
  let handler: Receiver;
  let dir: string;
  let pki: TestPki;
  const closers: Array<{ close(): void }> = [];
  const trunkNames: string[] = [];

  beforeAll(async () => {
    pki = makeTestPki(["localhost"]);
    dir = await mkdtemp(join(tmpdir(), "switchboard-sip-tls-"));
    // The edge's own certificate (a TLS listener: what its Via and Contact name) and the CA it trusts.
    await writeFile(join(dir, "cert.pem"), pki.cert);
    await writeFile(join(dir, "key.pem"), pki.key);
    await writeFile(join(dir, "ca.pem"), pki.ca);
    app = await build({
      config: testConfig({
        SIP_PORT: "0",
        SIP_TLS_PORT: "0",
        TLS_CERT_FILE: join(dir, "cert.pem"),
        TLS_KEY_FILE: join(dir, "key.pem"),
        SIP_TLS_CA_FILE: join(dir, "ca.pem"),
        RTP_PORT_MIN: "0",
        LOG_LEVEL: "silent",
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
      }),
      db: database.db,
    });
    sipPort = (await app.listenSip()).local("UDP")!.port;
    handler = await startReceiver();
    handler.handle((_req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(xml(`<Call TimeoutSeconds="20"><Endpoint>${FAR_NUMBER}</Endpoint></Call>`));
    });
  });

  afterAll(async () => {
    for (const c of closers) c.close();
    await handler?.close();
    await app?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  afterEach(async () => {
    const client = createTestClient(SipTrunks, database.db, systemClock);
    for (const name of trunkNames.splice(0)) await client.deleteSipTrunk({ name }).catch(() => {});
  });

  /** An enabled TLS trunk at 127.0.0.1:`port` (the edge forgets its cached list at once). */
  async function trunk(port: number): Promise<void> {
    const created = await createTestClient(SipTrunks, database.db, systemClock).createSipTrunk({
      sipTrunkId: `tls-${Math.random().toString(36).slice(2, 8)}`,
      sipTrunk: {
        address: `127.0.0.1:${port}`,
        transport: SipTrunk_Transport.TLS,
        username: "acct-tls",
        password: "tls secret",
        enabled: true,
      },
    });
    trunkNames.push(created.name);
  }

  /** A SIP caller calling a PROGRAMMABLE domain whose markup <Call>s FAR_NUMBER. */
  async function call(): Promise<{ p: Phone; uri: string; branch: string; cseq: number }> {
    const d = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
      parent: await newProject(database.db),
      sipDomainId: newSipDomainId("tls"),
      sipDomain: {
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}/call`],
        cidrBlocks: [{ cidrBlock: "127.0.0.1/32" }],
      },
    });
    const p = await Phone.open(sipPort);
    closers.push(p);
    const uri = `sip:1001@${d.fqdn}`;
    return { p, uri, ...p.invite(uri, { from: "sip:+61255500003@127.0.0.1" }) };
  }

  /** The child call of the parent with this SIP Call-ID once it is in `states`. */
  async function child(parentSipCallId: string, states: string[]): Promise<CallRow> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [parent] = await database.db.select().from(calls).where(eq(calls.sipCallId, parentSipCallId));
      if (parent !== undefined) {
        const [c] = await database.db.select().from(calls).where(eq(calls.parentCallId, parent.id));
        if (c !== undefined && states.includes(c.state)) return c;
      }
      if (Date.now() > deadline) throw new Error(`no child call in ${states.join("/")}`);
      await sleep(50);
    }
  }

  it("sends the <Call> over TLS, answers the 401, bridges on 200, and the caller's BYE reaches the trunk", async () => {
    const carrier = await streamTrunk({ cert: pki.cert, key: pki.key });
    closers.push(carrier);
    await trunk(carrier.port);
    const far = await Phone.open(sipPort); // the far end's RTP socket
    closers.push(far);
    const { p, uri, branch, cseq } = await call();

    const first = await carrier.next(isInvite);
    const requestUri = `sip:${FAR_NUMBER}@127.0.0.1:${carrier.port};transport=tls;user=phone`;
    expect(first.text.startsWith(`INVITE ${requestUri} SIP/2.0\r\n`)).toBe(true);
    expect(first.headers("Via")[0]).toMatch(/^SIP\/2\.0\/TLS /);
    carrier.write(
      sipResponse(first, "401 Unauthorized", [
        'WWW-Authenticate: Digest realm="tls.carrier.example", nonce="n0nce-tls", qop="auth", algorithm=MD5',
      ]),
    );
    const second = await carrier.next((m) => isInvite(m) && m.header("CSeq") === "2 INVITE");
    const auth = second.header("Authorization")!;
    const param = (k: string) => new RegExp(`${k}="?([^",]+)"?`).exec(auth)?.[1];
    expect(param("username")).toBe("acct-tls");
    const ha1 = md5("acct-tls:tls.carrier.example:tls secret");
    const ha2 = md5(`INVITE:${requestUri}`);
    expect(param("response")).toBe(md5(`${ha1}:n0nce-tls:${param("nc")}:${param("cnonce")}:auth:${ha2}`));
    const sdp = [
      "v=0",
      "o=carrier 7 1 IN IP4 127.0.0.1",
      "s=carrier",
      "c=IN IP4 127.0.0.1",
      "t=0 0",
      `m=audio ${far.rtpPort} RTP/AVP 0`,
      "a=rtpmap:0 PCMU/8000",
      "a=ptime:20",
      "a=sendrecv",
      "",
    ].join("\r\n");
    carrier.write(
      sipResponse(second, "200 OK", [`Contact: <sip:carrier@127.0.0.1:${carrier.port};transport=tls>`], sdp),
    );
    await carrier.next((m) => m.method === "ACK" && m.header("CSeq") === "2 ACK");

    const ok = await p.sip.inbox.next(
      (m) => m.text.includes(branch) && m.header("CSeq") === `${cseq} INVITE` && (m.status ?? 0) >= 200,
      15_000,
    );
    expect(ok.status).toBe(200);
    p.learn(ok);
    p.inDialog("ACK", uri, { cseq });
    const bridged = await child(p.callId, ["IN_PROGRESS"]);
    expect(bridged.to).toBe(FAR_NUMBER);
    // The caller's tone reaches the trunk's RTP socket through the bridge.
    const tone = Int16Array.from({ length: 4800 }, (_, i) =>
      Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000)),
    );
    const loud = () =>
      far.rtp.filter((x) => x.payloadType === 0 && x.payload.some((b) => (b & 0x7f) < 0x60)).length;
    const before = loud();
    await p.sendAudio(Phone.mediaPort(ok.body), tone);
    await sleep(300);
    expect(loud() - before).toBeGreaterThan(15);

    p.inDialog("BYE", uri);
    const bye = await carrier.next((m) => m.method === "BYE");
    expect(bye.header("Call-ID")).toBe(second.header("Call-ID"));
    expect(bye.headers("Via")[0]).toMatch(/^SIP\/2\.0\/TLS /);
    carrier.write(sipResponse(bye, "200 OK"));
    expect((await child(p.callId, ["COMPLETED"])).state).toBe("COMPLETED");
  }, 60_000);

  it("sends nothing to a TLS trunk whose certificate no trusted CA signed: the <Call> fails", async () => {
    const stranger = makeTestPki(["localhost"]);
    const carrier = await streamTrunk({ cert: stranger.cert, key: stranger.key });
    closers.push(carrier);
    await trunk(carrier.port);
    const { p } = await call();
    const failed = await child(p.callId, ["FAILED"]);
    expect(failed.errorCode).toMatch(/^SIP_/);
    expect(carrier.received).toEqual([]);
    expect(carrier.handshakeErrors.length).toBeGreaterThan(0);
  }, 60_000);
});
