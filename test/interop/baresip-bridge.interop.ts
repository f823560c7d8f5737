/**
 * Interop, bridging: two baresip softphones (Debian's `baresip-core` 1.0,
 * headless: test/interop/support/baresip.ts), alice and bob, registered to
 * one PROGRAMMABLE domain. Alice calls a number of the domain whose handler
 * answers `<Call>` to `sip:bob@…`: the service calls bob's registered
 * contact (bob answers at once) and bridges the two SIP legs. Each phone's
 * microphone is a tone of its own (alice 500 Hz, bob 1100 Hz): what each
 * one decoded (its `sndfile` dump) holds the other's tone, seconds of it,
 * and not its own — audio both ways through the service's bridge; with
 * both phones on PCMU, and with bob on PCMA (the bridge transcodes).
 * Run by `npm run test:interop` only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { systemClock } from "../../src/clock.js";
import { type App, build } from "../../src/server.js";
import { parseWav } from "../recordings/audio.js";
import { createTestClient, newProject, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { newSipDomainId } from "../voice/support.js";
import { FRAME, powerAt, sound, tone } from "./support/audio.js";
import { Baresip } from "./support/baresip.js";

const PASSWORD = "baresip-bridge-s3cret";
const ALICE_HZ = 500;
const BOB_HZ = 1100;

describe.each(testDatabases())("a call bridged between two baresip phones on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let udp: number;
  let handler: Receiver;
  let fqdn: string;
  const phones: Baresip[] = [];

  beforeAll(async () => {
    // baresip 1.0 answers only MD5 challenges (docs/connect.md).
    app = await build({
      config: testConfig({
        SIP_PORT: "0",
        RTP_PORT_MIN: "0",
        SIP_DIGEST_ALGORITHMS: "MD5",
        LOG_LEVEL: "silent",
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
      }),
      db: database.db,
    });
    udp = (await app.listenSip()).local("UDP")!.port;
    handler = await startReceiver();
    const d = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
      parent: await newProject(database.db),
      sipDomainId: newSipDomainId("bb"),
      sipDomain: {
        allowRegister: true,
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}/voice`],
        cidrBlocks: [{ cidrBlock: "127.0.0.1/32" }],
      },
    });
    fqdn = d.fqdn;
    handler.handle((req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(
        xml(
          req.path.startsWith("/voice")
            ? `<Call TimeoutSeconds="20"><Endpoint>sip:bob@${fqdn}</Endpoint></Call>`
            : "",
        ),
      );
    });
    const users = createTestClient(SipUsers, database.db, systemClock);
    for (const user of ["alice", "bob"]) {
      await users.createSipUser({
        parent: d.name,
        sipUserId: user,
        sipUser: { username: user, password: PASSWORD },
      });
    }
  });

  afterAll(async () => {
    for (const p of phones) await p.stop();
    await handler?.close();
    await app?.close();
  });

  it.each([
    ["PCMU", "PCMU"],
    ["PCMU", "PCMA"],
  ] as const)(
    "carries each phone's audio to the other (alice %s, bob %s)",
    async (aliceCodec, bobCodec) => {
      const bob = await Baresip.start({
        aor: `sip:bob@${fqdn}`,
        password: PASSWORD,
        edgePort: udp,
        microphone: tone(BOB_HZ, 120),
        answermode: "auto",
        codec: bobCodec,
      });
      phones.push(bob);
      const alice = await Baresip.start({
        aor: `sip:alice@${fqdn}`,
        password: PASSWORD,
        edgePort: udp,
        microphone: tone(ALICE_HZ, 120),
        codec: aliceCodec,
      });
      phones.push(alice);
      await bob.registered();
      await alice.registered();

      await alice.command("dial", `sip:1001@${fqdn}`);
      await bob.until(() => bob.events("CALL_ESTABLISHED").length > 0, "bob's answer", 45_000);
      await alice.until(() => alice.events("CALL_ESTABLISHED").length > 0, "alice's answer");
      // Three seconds of conversation, then alice hangs up; the service ends bob's leg.
      await new Promise((r) => setTimeout(r, 3000));
      expect(alice.events("CALL_CLOSED"), `the service ended the call:\n${alice.output()}`).toEqual([]);
      expect(bob.events("CALL_CLOSED"), `the service ended bob's leg:\n${bob.output()}`).toEqual([]);
      await alice.command("hangup");
      await alice.until(() => alice.events("CALL_CLOSED").length > 0, "alice's end");
      await bob.until(() => bob.events("CALL_CLOSED").length > 0, "bob's end (the service's BYE)");

      for (const [phone, hears, own] of [
        [bob, ALICE_HZ, BOB_HZ],
        [alice, BOB_HZ, ALICE_HZ],
      ] as const) {
        const file = phone.dump("dec");
        expect(file, `sndfile wrote no dump:\n${phone.output()}`).toBeDefined();
        const heard = parseWav(file!).firstChannel;
        const s = sound(heard);
        // At least two of the three seconds are sound…
        expect(s.soundFrames * FRAME, `${hears} Hz heard`).toBeGreaterThan(2 * 8000);
        // …and that sound is the other phone's tone, not this one's own (no echo, no loop).
        const stretch = heard.subarray(s.firstFrame * FRAME, (s.firstFrame + s.spanFrames) * FRAME);
        expect(powerAt(stretch, hears)).toBeGreaterThan(100 * powerAt(stretch, own));
      }
      // Both quit (and unregister), so the next call reaches the next test's bob.
      await alice.stop();
      await bob.stop();
    },
    150_000,
  );
});
