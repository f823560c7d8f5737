/**
 * Interop: baresip (Debian's `baresip-core`), a real softphone, run headless
 * with the configuration docs/connect.md gives (its `accounts` and `config`
 * files, read from the guide and written into a temporary directory, `-f
 * dir`): no audio device (ausine as the source, aufile as the player), no UI
 * module,
 * on 127.0.0.1 (`-n`: without it baresip picks the default interface).
 * It registers to a domain with a SIP user created through the API; the test
 * asserts the binding the edge stores, then that baresip removes it when it
 * quits (it unregisters on the way out).
 *
 * baresip's calls are baresip-media.interop.ts (a handler answering <Say>,
 * <Input> and <Record>) and baresip-bridge.interop.ts (two phones bridged).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
import { ROOT } from "../support/build.js";
import { pglite, useTestDatabase } from "../support/db.js";

const BASE = "sip.switchboard.local";
/** The guide's account: the user, its password and its domain (`office`). */
const ACCOUNT = fromGuide("baresip/accounts");
const PASSWORD = /;auth_pass=([^;]+);/.exec(ACCOUNT)![1]!;
const SIP_DOMAIN_ID = /^<sip:alice@([a-z0-9-]+)\./.exec(ACCOUNT)![1]!;

/** The contents docs/connect.md writes to `file` (a `cat > file <<'EOF'` block). */
function fromGuide(file: string): string {
  const guide = readFileSync(join(ROOT, "docs", "connect.md"), "utf8");
  const m = new RegExp(`cat > ${file.replace("/", "\\/")} <<'EOF'\\n([\\s\\S]*?)\\nEOF\\n`).exec(guide);
  if (m === null) throw new Error(`docs/connect.md writes no ${file}`);
  return `${m[1]!}\n`;
}

interface Baresip {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

function startBaresip(dir: string): Baresip {
  const child = spawn("baresip", ["-f", dir, "-n", "127.0.0.1"], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  child.stderr?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => out, exited };
}

describe("baresip registering to a SIP domain", () => {
  const database = useTestDatabase(pglite);
  let app: App;
  let udp: number;
  let dir: string;
  let sipDomainId: string;
  let baresip: Baresip | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sb-baresip-"));
    // baresip 1.0 (Debian 12) refuses a 401 that offers any algorithm but MD5, even beside
    // an MD5 challenge ("Register: Function not implemented"): MD5 alone (docs/connect.md).
    app = await build({
      config: testConfig({ SIP_PORT: "0", SIP_DIGEST_ALGORITHMS: "MD5", LOG_LEVEL: "silent" }),
      db: database.db,
    });
    udp = (await app.listenSip()).local("UDP")!.port;
    const domains = createTestClient(SipDomains, database.db, systemClock);
    const users = createTestClient(SipUsers, database.db, systemClock);
    const d = await domains.createSipDomain({
      parent: await newProject(database.db),
      sipDomainId: SIP_DOMAIN_ID,
      sipDomain: { allowRegister: true },
    });
    sipDomainId = d.sipDomainId;
    await users.createSipUser({
      parent: d.name,
      sipUserId: "alice",
      sipUser: { username: "alice", password: PASSWORD },
    });
  });

  afterAll(async () => {
    if (baresip && baresip.child.exitCode === null) {
      baresip.child.kill("SIGKILL");
      await baresip.exited;
    }
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const bindings = () =>
    database.db.select().from(sipRegistrations).where(eq(sipRegistrations.sipDomainId, sipDomainId));

  it("registers a SIP user created through the API, and unregisters when it quits", async () => {
    const fqdn = `${sipDomainId}.${BASE}`;
    // The guide's files, with the edge's port for the documented 5060.
    expect(ACCOUNT).toContain(`<sip:alice@${fqdn};`);
    writeFileSync(join(dir, "config"), fromGuide("baresip/config"));
    writeFileSync(join(dir, "accounts"), ACCOUNT.replace("127.0.0.1:5060", `127.0.0.1:${udp}`));
    const b = startBaresip(dir);
    baresip = b;
    const deadline = Date.now() + 30_000;
    let rows = await bindings();
    while (rows.length === 0) {
      if (b.child.exitCode !== null) throw new Error(`baresip exited (${b.child.exitCode}):\n${b.output()}`);
      if (Date.now() > deadline) throw new Error(`baresip did not register in 30 s:\n${b.output()}`);
      await new Promise((r) => setTimeout(r, 200));
      rows = await bindings();
    }
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row!.userId).toBe("alice");
    expect(row!.userAgent).toMatch(/^baresip/);
    expect(row!.sourceTransport).toBe("UDP");
    expect(row!.contactUri).toMatch(/^sip:alice-?[^@]*@127\.0\.0\.1:\d+/);
    expect(row!.sourceAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    // Asked for 300 s, granted as asked (between the 60 s minimum and the 3600 s maximum).
    const left = (row!.expiresAt.getTime() - Date.now()) / 1000;
    expect(left).toBeGreaterThan(200);
    expect(left).toBeLessThanOrEqual(300);
    await until(() => /registered successfully|200 OK/i.test(b.output()), b);

    // SIGTERM: baresip unregisters (Expires: 0) before it exits.
    b.child.kill("SIGTERM");
    await b.exited;
    expect(await bindings(), b.output()).toEqual([]);
  });
});

async function until(check: () => boolean, b: Baresip, limitMs = 30_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`baresip: condition not met in time:\n${b.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
