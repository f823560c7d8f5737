/**
 * Moving recording audio from the filesystem store into an S3 bucket
 * (s3rver): migrateBlobs on both databases (dry run, copy, a missing file
 * reported, repeated and interrupted runs copying only what is left, the
 * audio then served by a BLOB_STORE=s3 app), and `switchboard recordings
 * migrate-blobs` run as an operator runs it, on PostgreSQL.
 */
import { mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Recordings } from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import { main } from "../../src/cli.js";
import { createLogger } from "../../src/log.js";
import { speechLike } from "../../src/recordings/audio/signal.js";
import { type BlobStore, FileBlobStore } from "../../src/recordings/blobs.js";
import { createRecordings, type Recording } from "../../src/recordings/index.js";
import { migrateBlobs } from "../../src/recordings/migrate-blobs.js";
import { S3BlobStore } from "../../src/recordings/s3-blobs.js";
import { build } from "../../src/server.js";
import {
  createTestClient,
  newProject,
  TEST_OPERATOR_TOKEN,
  TEST_RECORDING_LINK_SECRET,
  testConfig,
} from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { describePostgres, postgresTestBackend, testDatabases, useTestDatabase } from "../support/db.js";
import { startS3, type TestS3 } from "../support/s3.js";

const RATE = 8000;
const log = createLogger("silent");

describe.each(testDatabases())("migrating recording audio into a bucket on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock("2026-03-01T10:00:00.000Z");
  let s3: TestS3;
  let blobDir: string;
  let bucket: S3BlobStore;
  let files: FileBlobStore;
  const made: Recording[] = [];

  beforeAll(async () => {
    s3 = await startS3();
    blobDir = await mkdtemp(join(tmpdir(), "sb-migrate-"));
    bucket = new S3BlobStore(testConfig(s3.env()).recordings.s3!);
    files = new FileBlobStore(blobDir);
    const domain = createRecordings({
      config: testConfig({ BLOB_DIR: blobDir }),
      clock,
      log,
      db: database.db,
    });
    const project = await newProject(database.db);
    for (const [seed, durationMs] of [
      [1, 1000],
      [2, 1500],
      [3, 0],
      [4, 800],
    ] as const) {
      const pending = await domain.createPending({
        projectId: project.split("/")[1]!,
        callId: "call-1",
        source: "RECORD_ACTION",
        postProcessing: [],
        readyUri: "",
        channelCount: 1,
      });
      const channels = [
        durationMs === 0 ? new Int16Array(800) : speechLike({ seed, durationMs, sampleRate: RATE }),
      ];
      made.push(await domain.complete(pending.id, { channels, sampleRate: RATE, startTime: clock.now() }));
    }
  });
  afterAll(async () => {
    bucket?.close();
    await s3?.remove();
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });

  it("copies what is not in the bucket, reports what is nowhere, and copies only what is left when run again", async () => {
    expect(made.map((r) => r.state)).toEqual(["SUCCEEDED", "SUCCEEDED", "EMPTY", "SUCCEEDED"]);
    const renditions = made.flatMap((r) => r.renditions);
    expect(renditions).toHaveLength(6);
    // One file is not on this machine (another replica's disk, say).
    const away = renditions[3]!;
    await rename(join(blobDir, ...away.blobKey.split("/")), join(blobDir, "away"));

    const missing: string[] = [];
    const dry = await migrateBlobs({
      db: database.db,
      from: files,
      to: bucket,
      dryRun: true,
      onMissing: (key) => missing.push(key),
    });
    expect(dry).toMatchObject({ recordings: 3, seen: 6, copied: 5, present: 0, missing: 1 });
    expect(missing).toEqual([away.blobKey]);
    for (const r of renditions) expect(await bucket.size(r.blobKey)).toBeUndefined();

    // Interrupted after two copies (the process stopped, the store failed).
    let puts = 0;
    const failing: BlobStore = {
      size: (key) => bucket.size(key),
      get: (key) => bucket.get(key),
      stream: (key, range) => bucket.stream(key, range),
      delete: (key) => bucket.delete(key),
      put: async (key, data) => {
        if (++puts > 2) throw new Error("interrupted");
        await bucket.put(key, data);
      },
    };
    await expect(migrateBlobs({ db: database.db, from: files, to: failing })).rejects.toThrow("interrupted");

    const progress: number[] = [];
    const resumed = await migrateBlobs({
      db: database.db,
      from: files,
      to: bucket,
      pageSize: 2,
      onProgress: (p) => progress.push(p.recordings),
    });
    expect(resumed).toMatchObject({ recordings: 3, seen: 6, copied: 3, present: 2, missing: 1 });
    expect(progress).toEqual([2, 3]);
    for (const r of renditions.filter((x) => x !== away)) {
      expect((await bucket.get(r.blobKey))?.equals((await files.get(r.blobKey))!), r.blobKey).toBe(true);
    }

    // The missing file comes back (copied from the other machine): the next run takes it alone.
    await rename(join(blobDir, "away"), join(blobDir, ...away.blobKey.split("/")));
    expect(await migrateBlobs({ db: database.db, from: files, to: bucket })).toMatchObject({
      copied: 1,
      present: 5,
      missing: 0,
    });
    expect(await migrateBlobs({ db: database.db, from: files, to: bucket })).toMatchObject({
      copied: 0,
      present: 6,
    });

    // A service on the bucket serves every recording's audio.
    const app = await build({
      config: testConfig(s3.env({ ROLE: "api", BLOB_DIR: join(blobDir, "unused") })),
      db: database.db,
      clock,
    });
    try {
      const base = `http://127.0.0.1:${(await app.listen(0, "127.0.0.1")).port}`;
      const client = createTestClient(Recordings, database.db, clock);
      for (const r of made.filter((x) => x.state === "SUCCEEDED")) {
        const got = await client.getRecording({ name: r.name });
        for (const audio of got.audio) {
          const res = await fetch(`${base}${audio.uri}`);
          expect(res.status, audio.uri).toBe(200);
          expect((await res.arrayBuffer()).byteLength).toBe(audio.sizeBytes);
        }
      }
    } finally {
      await app.close();
    }
  });
});

describe("switchboard recordings migrate-blobs", () => {
  const run = async (argv: string[], env: NodeJS.ProcessEnv) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(argv, { env, stdout: (t) => out.push(t), stderr: (t) => err.push(t) });
    return { code, out, err };
  };

  it("needs the bucket's settings and a source directory", async () => {
    const none = await run(["recordings", "migrate-blobs"], { DATA_DIR: "/nonexistent-sb" });
    expect(none.code).toBe(2);
    expect(none.err.join("\n")).toMatch(/set S3_BUCKET/);
    const noDir = await run(["recordings", "migrate-blobs", "--from-dir", "/nonexistent-sb"], {
      S3_BUCKET: "recordings",
    });
    expect(noDir.code).toBe(2);
    expect(noDir.err.join("\n")).toMatch(/\/nonexistent-sb is not a directory/);
    const help = await run(["recordings", "migrate-blobs", "--help"], {});
    expect(help.out.join("\n")).toMatch(/--from-dir DIR/);
  });

  describePostgres("on PostgreSQL", () => {
    const database = useTestDatabase(postgresTestBackend()!);
    const clock = new TestClock("2026-03-01T10:00:00.000Z");
    let s3: TestS3;
    let blobDir: string;

    beforeAll(async () => {
      s3 = await startS3();
      blobDir = await mkdtemp(join(tmpdir(), "sb-migrate-cli-"));
    });
    afterAll(async () => {
      await s3?.remove();
      if (blobDir) await rm(blobDir, { recursive: true, force: true });
    });

    it("copies with progress, and a second run copies nothing", async () => {
      const domain = createRecordings({
        config: testConfig({ BLOB_DIR: blobDir }),
        clock,
        log,
        db: database.db,
      });
      const project = await newProject(database.db);
      const pending = await domain.createPending({
        projectId: project.split("/")[1]!,
        callId: "call-1",
        source: "RECORD_ACTION",
        postProcessing: [],
        readyUri: "",
        channelCount: 1,
      });
      const channels = [speechLike({ seed: 9, durationMs: 1000, sampleRate: RATE })];
      const done = await domain.complete(pending.id, { channels, sampleRate: RATE, startTime: clock.now() });
      // The environment a replica runs with (still on the filesystem store), plus the bucket's settings.
      const env = {
        DATABASE_URL: database.url!,
        SWITCHBOARD_OPERATOR_TOKEN: TEST_OPERATOR_TOKEN,
        RECORDING_LINK_SECRET: TEST_RECORDING_LINK_SECRET,
        BLOB_DIR: blobDir,
        ...s3.env({ BLOB_STORE: "filesystem" }),
      };
      const first = await run(["recordings", "migrate-blobs"], env);
      expect(first.err).toEqual([]);
      expect(first.code).toBe(0);
      expect(first.out[0]).toMatch(
        new RegExp(`^copying recording audio from ${blobDir} into bucket "recordings"`),
      );
      expect(first.out.at(-1)).toMatch(
        /^done: recordings 1, renditions 2: copied 2 \(.* MB\), already in the bucket 0, missing 0$/,
      );
      const bucket = new S3BlobStore(testConfig(s3.env()).recordings.s3!);
      try {
        for (const r of done.renditions) expect(await bucket.size(r.blobKey)).toBe(r.sizeBytes);
      } finally {
        bucket.close();
      }
      const again = await run(["recordings", "migrate-blobs"], env);
      expect(again.code).toBe(0);
      expect(again.out.at(-1)).toMatch(/copied 0 .* already in the bucket 2, missing 0$/);
    });
  });
});
