/**
 * Interop: SIPp (Debian's `sip-tester`) as a carrier trunk against the SIP
 * edge of the real app, over UDP:
 * - out: a CreateCall to +E164 goes to SIPp (the enabled trunk), which
 *   challenges it 401 and checks the answer with its own digest code
 *   (verifyauth), then answers; the handler's <Say> plays and the service
 *   hangs up (scenarios/trunk-uas.xml);
 * - in: SIPp, from the trunk's inbound network, calls a number held by a
 *   project without credentials; the number's VoiceML handler answers and
 *   hangs up (scenarios/trunk-uac.xml).
 * Run by `npm run test:interop` (SWITCHBOARD_INTEROP=1); never by `npm test`.
 */
import dgram from "node:dgram";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Call_State, Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { SipTrunk_Transport, SipTrunks } from "../../gen/switchboard/admin/v1/sip_trunks_pb.js";
import { systemClock } from "../../src/clock.js";
import { calls } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import { TRUNK_CACHE_SECONDS } from "../../src/voice/sip-trunks/routing.js";
import { addBlock, numberingClients, provision } from "../numbering/support.js";
import { bearer, createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { pglite, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { SCENARIOS, sipp } from "./support/sipp.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A UDP port free right now on 127.0.0.1 (for SIPp to listen on). */
async function freeUdpPort(): Promise<number> {
  const s = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => s.bind(0, "127.0.0.1", () => resolve()));
  const port = s.address().port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

describe("SIPp as a carrier trunk", () => {
  const database = useTestDatabase(pglite);
  let app: App;
  let udp: number;
  let handler: Receiver;
  let api: ReturnType<typeof createClient<typeof Calls>>;

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
    udp = (await app.listenSip()).local("UDP")!.port;
    const base = `http://127.0.0.1:${(await app.listen(0)).port}`;
    api = createClient(
      Calls,
      createConnectTransport({
        baseUrl: base,
        httpVersion: "1.1",
        interceptors: [bearer(TEST_OPERATOR_TOKEN)],
      }),
    );
    handler = await startReceiver();
    handler.handle((_req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(xml("<Say>Hello through the trunk</Say>"));
    });
  });

  afterAll(async () => {
    await handler?.close();
    await app?.close();
  });

  async function number(handled: boolean): Promise<{ project: string; number: string }> {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, systemClock);
    const n = await addBlock(c, `+6125552${String(Math.floor(Math.random() * 1000)).padStart(3, "0")}0`, 10);
    const instance = await provision(c, project, n);
    if (handled) {
      await c.instances.updatePhoneNumberInstance({
        name: instance.name,
        phoneNumberInstance: { incomingCallHandlerUris: [`${handler.base}/in`] },
      });
    }
    return { project, number: n };
  }

  async function trunk(address: string, inboundNetworks: string[]): Promise<string> {
    const t = await createTestClient(SipTrunks, database.db, systemClock).createSipTrunk({
      sipTrunkId: `sipp-${Math.random().toString(36).slice(2, 8)}`,
      sipTrunk: {
        address,
        transport: SipTrunk_Transport.UDP,
        username: "acct-42",
        password: "trunk-s3cret",
        inboundNetworks,
        enabled: true,
      },
    });
    await sleep(TRUNK_CACHE_SECONDS * 1000 + 300);
    return t.name;
  }

  async function untrunk(name: string): Promise<void> {
    await createTestClient(SipTrunks, database.db, systemClock).deleteSipTrunk({ name });
    await sleep(TRUNK_CACHE_SECONDS * 1000 + 300);
  }

  it("places a call out through SIPp's trunk, answering its 401 (checked by SIPp's verifyauth)", async () => {
    const port = await freeUdpPort();
    const name = await trunk(`127.0.0.1:${port}`, []);
    try {
      const running = sipp(
        ["-sf", join(SCENARIOS, "trunk-uas.xml"), "-i", "127.0.0.1", "-p", String(port)],
        "60s",
      );
      await sleep(500); // SIPp listening
      const { project, number: from } = await number(false);
      const call = await api.createCall({
        parent: project,
        call: { to: "+61491570156", from, options: { handlerUris: [`${handler.base}/out`] } },
      });
      const run = await running;
      expect(run.code, run.output).toBe(0);
      let state = Call_State.STATE_UNSPECIFIED;
      for (let i = 0; i < 100 && state !== Call_State.COMPLETED; i++) {
        state = (await api.getCall({ name: call.name })).state;
        await sleep(100);
      }
      expect(Call_State[state]).toBe("COMPLETED");
    } finally {
      await untrunk(name);
    }
  });

  it("takes SIPp's call from the trunk network to a held number: its handler answers", async () => {
    const { number: held } = await number(true);
    const name = await trunk("192.0.2.10", ["127.0.0.1/32"]);
    try {
      const run = await sipp(
        [`127.0.0.1:${udp}`, "-sf", join(SCENARIOS, "trunk-uac.xml"), "-s", held.slice(1)],
        "60s",
      );
      expect(run.code, run.output).toBe(0);
      const [row] = await database.db.select().from(calls).where(eq(calls.to, held));
      expect(row?.from).toBe("+61491570156");
      expect(handler.requests.some((r) => r.path.startsWith("/in"))).toBe(true);
    } finally {
      await untrunk(name);
    }
  });
});
