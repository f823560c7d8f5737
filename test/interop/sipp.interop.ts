/**
 * Interop: SIPp (Debian's `sip-tester`) against the SIP edge of the real
 * app, over UDP and TCP: an OPTIONS ping, a SIP user's REGISTER through
 * SIPp's own digest implementation, and an INVITE challenged 401. Run by
 * `npm run test:interop` (the interop stage of .ci/run installs SIPp);
 * never by `npm test`, which needs nothing but Node.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { systemClock } from "../../src/clock.js";
import { sipRegistrations } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import { createTestClient, newProject, testConfig } from "../support/app.js";
import { pglite, useTestDatabase } from "../support/db.js";
import { newSipDomainId } from "../voice/support.js";

const SCENARIOS = join(import.meta.dirname, "scenarios");
const BASE = "sip.switchboard.local";

interface Run {
  code: number | null;
  output: string;
}

function sipp(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      "sipp",
      [...args, "-m", "1", "-timeout", "20s", "-nostdin", "-trace_err"],
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : null;
        resolve({ code, output: `${stdout}\n${stderr}` });
      },
    );
  });
}

describe("SIPp against the SIP edge", () => {
  const database = useTestDatabase(pglite);
  let app: App;
  let udp: number;
  let tcp: number;
  let dir: string;
  let sipDomainId: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-sipp-"));
    // SIPp 3.6 answers only the first challenge, and only MD5 (docs/configuration.md).
    app = await build({
      config: testConfig({ SIP_PORT: "0", SIP_DIGEST_ALGORITHMS: "MD5", LOG_LEVEL: "silent" }),
      db: database.db,
    });
    const edge = await app.listenSip();
    udp = edge.local("UDP")!.port;
    tcp = edge.local("TCP")!.port;
    const domains = createTestClient(SipDomains, database.db, systemClock);
    const users = createTestClient(SipUsers, database.db, systemClock);
    const d = await domains.createSipDomain({
      parent: await newProject(database.db),
      sipDomainId: newSipDomainId("sipp"),
      sipDomain: { allowRegister: true },
    });
    sipDomainId = d.sipDomainId;
    await users.createSipUser({
      parent: d.name,
      sipUserId: "alice",
      sipUser: { username: "alice", password: "sipp-s3cret" },
    });
    writeFileSync(join(dir, "users.csv"), "SEQUENTIAL\nalice;\n");
  });

  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [transport, flag] of [
    ["UDP", "u1"],
    ["TCP", "t1"],
  ] as const) {
    const port = () => (transport === "UDP" ? udp : tcp);

    it(`answers SIPp's OPTIONS over ${transport}`, async () => {
      const run = await sipp([`127.0.0.1:${port()}`, "-sf", join(SCENARIOS, "options.xml"), "-t", flag]);
      expect(run.code, run.output).toBe(0);
    });

    it(`registers a SIP user through SIPp's digest answer over ${transport}`, async () => {
      const bound = async () =>
        (
          await database.db
            .select()
            .from(sipRegistrations)
            .where(eq(sipRegistrations.sipDomainId, sipDomainId))
        )
          .filter((r) => r.sourceTransport === transport)
          .map((r) => r.userAgent);
      expect(await bound()).toEqual([]);
      const run = await sipp([
        `127.0.0.1:${port()}`,
        "-sf",
        join(SCENARIOS, "register.xml"),
        "-inf",
        join(dir, "users.csv"),
        "-au",
        "alice",
        "-ap",
        "sipp-s3cret",
        "-s",
        `${sipDomainId}.${BASE}`,
        "-t",
        flag,
      ]);
      expect(run.code, run.output).toBe(0);
      // The binding is SIPp's contact, last registered over this transport (UDP's is refreshed by TCP's).
      expect(await bound()).toEqual(["SIPp"]);
    });

    it(`challenges SIPp's INVITE to a domain with users (401) over ${transport}`, async () => {
      const run = await sipp([
        `127.0.0.1:${port()}`,
        "-sf",
        join(SCENARIOS, "invite-challenged.xml"),
        "-s",
        `${sipDomainId}.${BASE}`,
        "-t",
        flag,
      ]);
      expect(run.code, run.output).toBe(0);
    });
  }
});
