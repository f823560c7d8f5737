/**
 * Telling the operator that replicas on the filesystem store do not share
 * their audio (src/recordings/blob-sharing.ts): two apps on one database,
 * each with its own BLOB_DIR, as on two machines. The second warns at start
 * naming BLOB_STORE; both show it in /readyz's details. Replicas sharing one
 * BLOB_DIR, or a replica on an S3 bucket, show nothing.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, build } from "../../src/server.js";
import { captureLog } from "../observability/support.js";
import { testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { startS3, type TestS3 } from "../support/s3.js";

interface Ready {
  status: string;
  details?: { reason: string; setting: string; message: string; engines: string[] }[];
}

describe.each(testDatabases())("replicas' blob stores on $name", (backend) => {
  const database = useTestDatabase(backend);
  let root: string;
  let s3: TestS3;
  const apps: App[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "sb-sharing-"));
    s3 = await startS3();
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await s3?.remove();
    if (root) await rm(root, { recursive: true, force: true });
  });

  async function start(env: NodeJS.ProcessEnv) {
    const log = captureLog("info");
    const app = await build({
      config: testConfig({ ROLE: "api", ...env }),
      db: database.db,
      log: log.logger,
    });
    apps.push(app);
    const base = `http://127.0.0.1:${(await app.listen(0, "127.0.0.1")).port}`;
    const ready = async (): Promise<Ready> => {
      const res = await fetch(`${base}/readyz`);
      expect(res.status).toBe(200);
      return (await res.json()) as Ready;
    };
    return { app, log, ready };
  }

  it("warns, at start and in /readyz, while another replica keeps its audio elsewhere; not when they share", async () => {
    const a = await start({ BLOB_DIR: join(root, "a") });
    expect(await a.ready()).toEqual({ status: "SERVING" });
    // A second replica on the same directory (one shared volume): nothing to say.
    const shared = await start({ BLOB_DIR: join(root, "a") });
    expect(await shared.ready()).toEqual({ status: "SERVING" });
    expect(shared.log.lines.filter((l) => l.level === 40)).toEqual([]);

    // One with a directory of its own (another machine's disk).
    const b = await start({ BLOB_DIR: join(root, "b") });
    const warning = b.log.lines.find((l) => l.setting === "BLOB_STORE");
    expect(warning).toMatchObject({ level: 40, blobDir: join(root, "b") });
    expect(String(warning?.msg)).toMatch(/does not share this replica's BLOB_DIR.*set BLOB_STORE=s3/);
    expect([...((warning?.engines as string[] | undefined) ?? [])].sort()).toEqual(
      [a.app.engine.id, shared.app.engine.id].sort(),
    );
    const readyB = await b.ready();
    expect(readyB.status).toBe("SERVING");
    expect(readyB.details).toEqual([
      expect.objectContaining({
        reason: "FILESYSTEM_BLOB_STORE_NOT_SHARED",
        setting: "BLOB_STORE",
        engines: [a.app.engine.id, shared.app.engine.id].sort(),
      }),
    ]);
    // The first replica learns of it too (its look-up is at most 5 s old).
    let readyA = await a.ready();
    for (let i = 0; i < 100 && readyA.details === undefined; i++) {
      await new Promise((r) => setTimeout(r, 100));
      readyA = await a.ready();
    }
    expect(readyA.details?.[0]).toMatchObject({ setting: "BLOB_STORE", engines: [b.app.engine.id] });
    expect(a.log.lines.some((l) => l.setting === "BLOB_STORE")).toBe(true);

    // A replica on a bucket has no BLOB_DIR to share: it says nothing (the others name it).
    const onBucket = await start(s3.env({ BLOB_DIR: join(root, "c") }));
    expect(await onBucket.ready()).toEqual({ status: "SERVING" });
  });
});
