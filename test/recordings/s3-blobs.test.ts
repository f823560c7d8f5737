/**
 * Recording audio on an S3-compatible bucket (BLOB_STORE=s3), against a
 * real S3-protocol server (s3rver, test/support/s3.ts): the store itself
 * (objects, ranges, the key prefix, the start-up check's messages), its
 * settings, and recordings end to end through the real app on both
 * databases — stored before SUCCEEDED, served with Content-Length and
 * ranges (206/416) and HEAD, deleted with the recording, and FAILED
 * INTERNAL_ERROR with nothing kept when the store refuses the credentials,
 * is cut off mid-write on every attempt, or is stopped (a single cut is
 * tried again and succeeds). Download ranges are checked on the
 * filesystem store too.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Recordings } from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import { ConfigError, type S3Config } from "../../src/config.js";
import { createLogger } from "../../src/log.js";
import { speechLike } from "../../src/recordings/audio/signal.js";
import { openBlobStore } from "../../src/recordings/blob-store.js";
import type { BlobStore } from "../../src/recordings/blobs.js";
import { FileBlobStore } from "../../src/recordings/blobs.js";
import { createRecordings, type Recording, type RecordingsDomain } from "../../src/recordings/index.js";
import { RangeNotSatisfiable } from "../../src/recordings/ranges.js";
import { BlobStoreUnavailable, S3BlobStore } from "../../src/recordings/s3-blobs.js";
import { type App, build } from "../../src/server.js";
import { bearer, createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { pglite, testDatabases, useTestDatabase } from "../support/db.js";
import { freePort } from "../support/process.js";
import { type Cutter, cutter, startS3, type TestS3 } from "../support/s3.js";

const RATE = 8000;
const log = createLogger("silent");

async function read(body: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function s3Config(s3: TestS3, env: NodeJS.ProcessEnv = {}): S3Config {
  return testConfig(s3.env(env)).recordings.s3!;
}

describe("S3BlobStore", () => {
  let s3: TestS3;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.remove();
  });

  it("puts, gets, streams whole and in ranges, sizes and deletes objects, under the key prefix", async () => {
    const store = new S3BlobStore(s3Config(s3, { S3_KEY_PREFIX: "install-1" }));
    const bare = new S3BlobStore(s3Config(s3));
    try {
      const data = Buffer.from("0123456789abcdefghij");
      await store.put("recordings/p1/r1.wav", Buffer.from("old"));
      await store.put("recordings/p1/r1.wav", data); // replaces
      expect((await store.get("recordings/p1/r1.wav"))?.toString()).toBe(data.toString());
      // The object's key carries the prefix.
      expect(await bare.size("install-1/recordings/p1/r1.wav")).toBe(20);
      expect(await bare.size("recordings/p1/r1.wav")).toBeUndefined();

      const whole = await store.stream("recordings/p1/r1.wav");
      expect(whole?.size).toBe(20);
      expect(whole?.range).toBeUndefined();
      expect((await read(whole!.body)).toString()).toBe(data.toString());
      for (const [range, start, end] of [
        [{ first: 2, last: 5 }, 2, 5],
        [{ first: 15 }, 15, 19],
        [{ first: 10, last: 999 }, 10, 19],
        [{ suffix: 4 }, 16, 19],
      ] as const) {
        const part = await store.stream("recordings/p1/r1.wav", range);
        expect(part?.size, JSON.stringify(range)).toBe(20);
        expect(part?.range, JSON.stringify(range)).toEqual({ start, end });
        expect((await read(part!.body)).toString()).toBe(data.subarray(start, end + 1).toString());
      }
      await expect(store.stream("recordings/p1/r1.wav", { first: 20 })).rejects.toBeInstanceOf(
        RangeNotSatisfiable,
      );
      expect(await store.size("recordings/p1/r1.wav")).toBe(20);
      await store.delete("recordings/p1/r1.wav");
      await store.delete("recordings/p1/r1.wav"); // missing is fine
      expect(await store.get("recordings/p1/r1.wav")).toBeUndefined();
      expect(await store.stream("recordings/p1/r1.wav", { first: 0 })).toBeUndefined();
      expect(await store.size("recordings/p1/r1.wav")).toBeUndefined();
      await expect(store.put("../x", Buffer.from("x"))).rejects.toThrow(/invalid blob key/);
    } finally {
      store.close();
      bare.close();
    }
  });

  it("names what is wrong when the bucket cannot be used, and build() does not start", async () => {
    const unavailable = async (env: NodeJS.ProcessEnv): Promise<string> => {
      const store = new S3BlobStore(s3Config(s3, env));
      try {
        const err = await store.check().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(BlobStoreUnavailable);
        return (err as Error).message;
      } finally {
        store.close();
      }
    };
    await new S3BlobStore(s3Config(s3)).check();
    expect(await unavailable({ S3_BUCKET: "no-such-bucket" })).toMatch(
      /S3_BUCKET "no-such-bucket" does not exist/,
    );
    expect(await unavailable({ S3_ACCESS_KEY_ID: "NOT-A-KEY" })).toMatch(
      /refused the credentials .*HTTP 403\).*S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY/,
    );
    const closed = `http://127.0.0.1:${await freePort()}`;
    expect(await unavailable({ S3_ENDPOINT: closed, S3_REQUEST_TIMEOUT_MS: "2000" })).toMatch(
      new RegExp(`cannot reach S3_ENDPOINT ${closed} \\(ECONNREFUSED`),
    );

    // The service does not start on a bucket it cannot use.
    await expect(build({ config: testConfig(s3.env({ S3_BUCKET: "no-such-bucket" })) })).rejects.toThrow(
      /S3_BUCKET "no-such-bucket" does not exist/,
    );
  });

  it("settings are checked at start", () => {
    const ok = testConfig(s3.env({ S3_KEY_PREFIX: "a/b" })).recordings;
    expect(ok.blobStore).toBe("s3");
    expect(ok.s3).toMatchObject({ bucket: "recordings", keyPrefix: "a/b/", forcePathStyle: true });
    expect(testConfig().recordings).toMatchObject({ blobStore: "filesystem", s3: undefined });
    // S3 settings without BLOB_STORE=s3: read (for migrate-blobs), not used.
    expect(testConfig({ S3_BUCKET: "b-1" }).recordings).toMatchObject({
      blobStore: "filesystem",
      s3: { bucket: "b-1", region: "us-east-1", endpoint: undefined, credentials: undefined },
    });
    for (const [env, message] of [
      [{ BLOB_STORE: "s3" }, /S3_BUCKET must be set when BLOB_STORE=s3/],
      [{ BLOB_STORE: "ftp" }, /BLOB_STORE must be one of filesystem, s3/],
      [{ S3_BUCKET: "Bad_Bucket" }, /S3_BUCKET must be a bucket name/],
      [{ S3_BUCKET: "b-1", S3_ENDPOINT: "s3.example.com" }, /S3_ENDPOINT must be an http\(s\) URL/],
      [{ S3_BUCKET: "b-1", S3_ACCESS_KEY_ID: "k" }, /must be set together/],
      [{ S3_BUCKET: "b-1", S3_KEY_PREFIX: "a/../b" }, /S3_KEY_PREFIX must be/],
      [{ S3_BUCKET: "b-1", S3_FORCE_PATH_STYLE: "yes" }, /S3_FORCE_PATH_STYLE must be true or false/],
      [{ S3_BUCKET: "b-1", S3_REGION: "US East" }, /S3_REGION must be/],
    ] as const) {
      expect(() => testConfig(env), JSON.stringify(env)).toThrow(ConfigError);
      expect(() => testConfig(env), JSON.stringify(env)).toThrow(message);
    }
  });
});

describe.each(testDatabases())("recordings on an S3 bucket on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock("2026-03-01T10:00:00.000Z");
  let s3: TestS3;
  let proxy: Cutter;
  let blobDir: string;
  let app: App;
  let base: string;
  let store: S3BlobStore;
  let domain: RecordingsDomain;

  beforeAll(async () => {
    s3 = await startS3();
    proxy = await cutter(s3.port);
    blobDir = await mkdtemp(join(tmpdir(), "sb-s3-test-fs-"));
    const config = testConfig(s3.env({ ROLE: "api", BLOB_DIR: blobDir }));
    app = await build({ config, db: database.db, clock });
    base = `http://127.0.0.1:${(await app.listen(0, "127.0.0.1")).port}`;
    // The engine's view: the same database and bucket (another client of it).
    store = new S3BlobStore(config.recordings.s3!);
    domain = createRecordings({ config, clock, log, db: database.db, blobs: store });
  });
  afterAll(async () => {
    await app?.close();
    store?.close();
    await proxy?.close();
    await s3?.remove();
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });

  async function record(project: string, d: RecordingsDomain = domain): Promise<Recording> {
    const pending = await d.createPending({
      projectId: project.split("/")[1]!,
      callId: "call-1",
      source: "RECORD_ACTION",
      postProcessing: [],
      readyUri: "",
      channelCount: 1,
    });
    const channels = [speechLike({ seed: 3, durationMs: 2000, sampleRate: RATE })];
    return d.complete(pending.id, { channels, sampleRate: RATE, startTime: clock.now() });
  }

  /** A domain on the same database whose store is `blobs`. */
  const domainWith = (blobs: BlobStore) =>
    createRecordings({ config: testConfig(), clock, log, db: database.db, blobs });

  const keysOf = (r: Recording) =>
    (["wav", "mp3"] as const).map((f) => `recordings/${r.projectId}/${r.id}.${f}`);

  it("stores the audio before SUCCEEDED and serves it whole, in ranges and to HEAD; deleting deletes the objects", async () => {
    const project = await newProject(database.db);
    const done = await record(project);
    expect(done.state).toBe("SUCCEEDED");
    for (const r of done.renditions) expect(await store.size(r.blobKey), r.blobKey).toBe(r.sizeBytes);
    // Nothing on the filesystem: BLOB_STORE=s3.
    expect(await new FileBlobStore(blobDir).size(done.renditions[0]!.blobKey)).toBeUndefined();

    // Through the app (its own client of the bucket).
    const recordings = createClient(
      Recordings,
      createConnectTransport({
        baseUrl: base,
        httpVersion: "1.1",
        interceptors: [bearer(TEST_OPERATOR_TOKEN)],
      }),
    );
    const got = await recordings.getRecording({ name: done.name });
    const wav = got.audio.find((a) => a.mimeType === "audio/x-wav")!;
    const url = `${base}${wav.uri}`;
    const stored = (await store.get(done.renditions[0]!.blobKey))!;

    const whole = await fetch(url);
    expect(whole.status).toBe(200);
    expect(whole.headers.get("accept-ranges")).toBe("bytes");
    expect(Number(whole.headers.get("content-length"))).toBe(wav.sizeBytes);
    expect(Buffer.from(await whole.arrayBuffer()).equals(stored)).toBe(true);

    const size = stored.length;
    for (const [range, start, end] of [
      ["bytes=0-43", 0, 43],
      ["bytes=44-", 44, size - 1],
      ["bytes=-100", size - 100, size - 1],
      [`bytes=100-${size + 5000}`, 100, size - 1],
    ] as const) {
      const res = await fetch(url, { headers: { range } });
      expect(res.status, range).toBe(206);
      expect(res.headers.get("content-range"), range).toBe(`bytes ${start}-${end}/${size}`);
      expect(Number(res.headers.get("content-length")), range).toBe(end - start + 1);
      expect(Buffer.from(await res.arrayBuffer()).equals(stored.subarray(start, end + 1)), range).toBe(true);
    }
    const outside = await fetch(url, { headers: { range: `bytes=${size}-` } });
    expect(outside.status).toBe(416);
    expect(outside.headers.get("content-range")).toBe(`bytes */${size}`);
    expect(((await outside.json()) as { error: { status: string } }).error.status).toBe("OUT_OF_RANGE");
    // Several ranges, or a validator to compare: the whole file.
    for (const headers of [{ range: "bytes=0-1,5-9" }, { range: "bytes=0-1", "if-range": '"x"' }]) {
      const res = await fetch(url, { headers });
      expect(res.status, JSON.stringify(headers)).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBe(size);
    }

    const head = await fetch(url, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get("content-length"))).toBe(size);
    expect(head.headers.get("content-type")).toBe("audio/x-wav");
    expect((await head.arrayBuffer()).byteLength).toBe(0);

    await recordings.deleteRecording({ name: done.name });
    for (const key of keysOf(done)) expect(await store.size(key), key).toBeUndefined();
    expect((await fetch(url)).status).toBe(404);
    expect((await fetch(url, { method: "HEAD" })).status).toBe(404);
  });

  it("ends FAILED INTERNAL_ERROR, keeping nothing, when the store refuses the credentials", async () => {
    const refused = new S3BlobStore(s3Config(s3, { S3_ACCESS_KEY_ID: "NOT-A-KEY" }));
    try {
      const project = await newProject(database.db);
      const failed = await record(project, domainWith(refused));
      expect(failed).toMatchObject({ state: "FAILED", errorCode: "INTERNAL_ERROR", renditions: [] });
      for (const key of keysOf(failed)) expect(await store.size(key), key).toBeUndefined();
    } finally {
      refused.close();
    }
  });

  it("tries a write cut off mid-way again, and ends FAILED INTERNAL_ERROR when every try is cut", async () => {
    const through = new S3BlobStore(s3Config(s3, { S3_ENDPOINT: proxy.endpoint }));
    try {
      const project = await newProject(database.db);
      const d = domainWith(through);
      // One cut: the client's next attempt stores it.
      proxy.cut(2000, 1);
      const retried = await record(project, d);
      expect(proxy.cuts()).toBe(1);
      expect(retried.state).toBe("SUCCEEDED");
      for (const r of retried.renditions) expect(await store.size(r.blobKey)).toBe(r.sizeBytes);

      // Every attempt cut (3 of them): FAILED, and nothing left in the bucket.
      proxy.cut(2000, 100);
      const failed = await record(project, d);
      expect(proxy.cuts()).toBeGreaterThanOrEqual(4);
      expect(failed).toMatchObject({ state: "FAILED", errorCode: "INTERNAL_ERROR", renditions: [] });
      proxy.cut(0, 0);
      for (const key of keysOf(failed)) expect(await store.size(key), key).toBeUndefined();
    } finally {
      through.close();
    }
  });

  it("ends FAILED INTERNAL_ERROR when the store is stopped", async () => {
    const other = await startS3("stopped");
    const gone = new S3BlobStore(s3Config(other, { S3_REQUEST_TIMEOUT_MS: "2000" }));
    try {
      await gone.check();
      await other.stop();
      const failed = await record(await newProject(database.db), domainWith(gone));
      expect(failed).toMatchObject({ state: "FAILED", errorCode: "INTERNAL_ERROR", renditions: [] });
    } finally {
      gone.close();
      await other.remove();
    }
  });
});

describe("download ranges on the filesystem store", () => {
  const database = useTestDatabase(pglite);
  const clock = new TestClock("2026-03-01T10:00:00.000Z");
  let blobDir: string;
  let app: App;

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), "sb-fs-range-"));
    app = await build({ config: testConfig({ ROLE: "api", BLOB_DIR: blobDir }), db: database.db, clock });
  });
  afterAll(async () => {
    await app?.close();
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });

  it("answers 206 with Content-Range, 416 outside the file, and HEAD", async () => {
    const base = `http://127.0.0.1:${(await app.listen(0, "127.0.0.1")).port}`;
    const opened = await openBlobStore(testConfig({ BLOB_DIR: blobDir }).recordings);
    expect(opened.describe.blobStore).toBe("filesystem");
    const d = createRecordings({ config: testConfig({ BLOB_DIR: blobDir }), clock, log, db: database.db });
    const project = await newProject(database.db);
    const pending = await d.createPending({
      projectId: project.split("/")[1]!,
      callId: "call-1",
      source: "RECORD_ACTION",
      postProcessing: [],
      readyUri: "",
      channelCount: 1,
    });
    const channels = [speechLike({ seed: 5, durationMs: 1000, sampleRate: RATE })];
    const done = await d.complete(pending.id, { channels, sampleRate: RATE, startTime: clock.now() });
    const got = await createTestClient(Recordings, database.db, clock).getRecording({ name: done.name });
    const mp3 = got.audio.find((a) => a.mimeType === "audio/mpeg")!;
    const url = `${base}${mp3.uri}`;
    const stored = (await opened.store.get(done.renditions[1]!.blobKey))!;
    const size = stored.length;

    const part = await fetch(url, { headers: { range: "bytes=10-19" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 10-19/${size}`);
    expect(part.headers.get("content-length")).toBe("10");
    expect(Buffer.from(await part.arrayBuffer()).equals(stored.subarray(10, 20))).toBe(true);
    const tail = await fetch(url, { headers: { range: "bytes=-7" } });
    expect(tail.status).toBe(206);
    expect(Buffer.from(await tail.arrayBuffer()).equals(stored.subarray(size - 7))).toBe(true);
    const outside = await fetch(url, { headers: { range: "bytes=999999-" } });
    expect(outside.status).toBe(416);
    expect(outside.headers.get("content-range")).toBe(`bytes */${size}`);
    const head = await fetch(url, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("accept-ranges")).toBe("bytes");
    expect(Number(head.headers.get("content-length"))).toBe(size);
    const whole = await fetch(url);
    expect(whole.status).toBe(200);
    expect(Number(whole.headers.get("content-length"))).toBe(size);
  });
});
