/** The filesystem blob store, the link secret and link signing, and their configuration. */
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { FileBlobStore } from "../../src/recordings/blobs.js";
import { LinkSigner, parseAudioPath, resolveLinkSecret } from "../../src/recordings/links.js";
import { parseRange, RangeNotSatisfiable } from "../../src/recordings/ranges.js";
import { TestClock } from "../support/clock.js";

describe("FileBlobStore", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "switchboard-blob-test-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("puts, gets, streams and deletes by key", async () => {
    const store = new FileBlobStore(dir);
    await store.put("recordings/p1/r1.wav", Buffer.from("hello"));
    await store.put("recordings/p1/r1.wav", Buffer.from("hello again")); // replaces
    expect((await store.get("recordings/p1/r1.wav"))?.toString()).toBe("hello again");
    const stream = await store.stream("recordings/p1/r1.wav");
    expect(stream?.size).toBe(11);
    const chunks: Buffer[] = [];
    for await (const c of stream!.body) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe("hello again");
    expect((await stat(join(dir, "recordings", "p1", "r1.wav"))).mode & 0o777).toBe(0o600);
    await store.delete("recordings/p1/r1.wav");
    await store.delete("recordings/p1/r1.wav"); // missing is fine
    expect(await store.get("recordings/p1/r1.wav")).toBeUndefined();
    expect(await store.stream("recordings/p1/r1.wav")).toBeUndefined();
  });

  it("streams byte ranges and sizes blobs", async () => {
    const store = new FileBlobStore(dir);
    await store.put("recordings/p1/r2.mp3", Buffer.from("0123456789"));
    expect(await store.size("recordings/p1/r2.mp3")).toBe(10);
    expect(await store.size("recordings/p1/none.mp3")).toBeUndefined();
    for (const [range, text] of [
      [{ first: 2, last: 4 }, "234"],
      [{ first: 7 }, "789"],
      [{ first: 8, last: 100 }, "89"],
      [{ suffix: 3 }, "789"],
      [{ suffix: 30 }, "0123456789"],
    ] as const) {
      const part = await store.stream("recordings/p1/r2.mp3", range);
      expect(part?.size).toBe(10);
      const chunks: Buffer[] = [];
      for await (const c of part!.body) chunks.push(c as Buffer);
      expect(Buffer.concat(chunks).toString(), JSON.stringify(range)).toBe(text);
    }
    await expect(store.stream("recordings/p1/r2.mp3", { first: 10 })).rejects.toBeInstanceOf(
      RangeNotSatisfiable,
    );
    await expect(store.stream("recordings/p1/r2.mp3", { suffix: 0 })).rejects.toBeInstanceOf(
      RangeNotSatisfiable,
    );
    expect(await store.stream("recordings/p1/none.mp3", { first: 0 })).toBeUndefined();
  });

  it("parses the Range header forms players send, and ignores the rest", () => {
    expect(parseRange("bytes=0-")).toEqual({ first: 0 });
    expect(parseRange("bytes=5-9")).toEqual({ first: 5, last: 9 });
    expect(parseRange("bytes=-500")).toEqual({ suffix: 500 });
    for (const h of [
      undefined,
      "",
      "bytes=",
      "bytes=-",
      "bytes=9-5",
      "bytes=0-1,4-5",
      "items=0-1",
      "bytes=a-b",
    ]) {
      expect(parseRange(h), String(h)).toBeUndefined();
    }
  });

  it("refuses keys that would leave its directory", async () => {
    const store = new FileBlobStore(dir);
    for (const key of ["../x", "a/../../x", "/etc/passwd", "a//b", "", "a/./b", "a\\b"]) {
      await expect(store.put(key, Buffer.from("x")), key).rejects.toThrow(/invalid blob key/);
    }
  });
});

describe("download links", () => {
  it("verify until they expire, and only for their own path", () => {
    const clock = new TestClock("2026-01-01T00:00:00Z");
    const signer = new LinkSigner("s".repeat(32), clock, "https://api.example.com");
    const link = new URL(signer.sign({ projectId: "p", callId: "c", recordingId: "r", format: "wav" }));
    expect(link.origin).toBe("https://api.example.com");
    expect(link.pathname).toBe("/v1beta1/projects/p/calls/c/recordings/r/audio/wav");
    expect(link.searchParams.get("expires")).toBe(String(Date.parse("2026-01-01T01:00:00Z") / 1000));
    expect(parseAudioPath(link.pathname)).toEqual({
      projectId: "p",
      callId: "c",
      recordingId: "r",
      format: "wav",
    });
    expect(parseAudioPath("/v1beta1/projects/p/calls/c/recordings/r/audio/ogg")).toBeUndefined();
    expect(signer.verify(link.pathname, link.searchParams)).toBe(true);
    expect(new LinkSigner("t".repeat(32), clock).verify(link.pathname, link.searchParams)).toBe(false);
    expect(signer.verify(link.pathname.replace("/r/", "/q/"), link.searchParams)).toBe(false);
    clock.advance(3600 * 1000);
    expect(signer.verify(link.pathname, link.searchParams)).toBe(false);
  });

  it("use RECORDING_LINK_SECRET, or one generated once and kept in DATA_DIR (embedded database only)", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "switchboard-secret-"));
    try {
      const config = loadConfig({ DATA_DIR: dataDir });
      const first = resolveLinkSecret(config);
      expect(first.length).toBeGreaterThanOrEqual(32);
      expect((await readFile(join(dataDir, "recording-link-secret"), "utf8")).trim()).toBe(first);
      expect(resolveLinkSecret(config)).toBe(first);
      const secret = "x".repeat(40);
      expect(resolveLinkSecret(loadConfig({ DATA_DIR: dataDir, RECORDING_LINK_SECRET: secret }))).toBe(
        secret,
      );
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
    const token = { SWITCHBOARD_OPERATOR_TOKEN: "o".repeat(20), DATABASE_URL: "postgres://x@127.0.0.1/db" };
    expect(() => loadConfig(token)).toThrow(ConfigError);
    expect(() => loadConfig({ ...token, RECORDING_LINK_SECRET: "short" })).toThrow(ConfigError);
    expect(loadConfig({ ...token, RECORDING_LINK_SECRET: "y".repeat(32) }).recordings.linkSecret).toBe(
      "y".repeat(32),
    );
    expect(() => loadConfig({ RECORDING_LINK_BASE_URL: "https://x.example/path" })).toThrow(ConfigError);
  });
});
