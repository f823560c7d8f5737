/**
 * The blob store: opaque byte strings by key. Recordings keep their audio
 * here; rows in the database hold only the keys.
 *
 * Keys are relative paths of `[A-Za-z0-9._-]` segments separated by `/`
 * (`recordings/{project}/{recording}.wav`); no segment is empty, `.` or
 * `..`. `put` replaces atomically (a reader sees the old bytes or the new,
 * never a part); `delete` of a missing key is not an error.
 *
 * FileBlobStore keeps each blob as a file under a directory (BLOB_DIR,
 * default `<DATA_DIR>/blobs`); fine for one machine or a shared volume.
 * An S3-compatible store (one bucket, keys as object keys, `stream` as a
 * ranged or plain GetObject, `put` as PutObject) implements the same
 * interface and can replace it without touching callers.
 */

import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Readable } from "node:stream";

export interface BlobStream {
  size: number;
  body: Readable;
}

export interface BlobStore {
  put(key: string, data: Uint8Array): Promise<void>;
  /** The bytes, or undefined when there is no such blob. */
  get(key: string): Promise<Buffer | undefined>;
  /** A stream of the bytes with their size, or undefined when there is no such blob. */
  stream(key: string): Promise<BlobStream | undefined>;
  delete(key: string): Promise<void>;
}

const SEGMENT = /^[A-Za-z0-9._-]+$/;

/** Throws unless `key` is a valid blob key. */
export function checkBlobKey(key: string): void {
  const segments = key.split("/");
  if (key.length > 512 || segments.some((s) => !SEGMENT.test(s) || s === "." || s === "..")) {
    throw new Error(`invalid blob key ${JSON.stringify(key)}`);
  }
}

function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === "ENOENT";
}

export class FileBlobStore implements BlobStore {
  constructor(private readonly root: string) {}

  private path(key: string): string {
    checkBlobKey(key);
    return join(this.root, ...key.split("/"));
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true });
    // Write next to the target, then rename: readers never see a partial file.
    const temp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
    try {
      await writeFile(temp, data, { mode: 0o600 });
      await rename(temp, path);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      return await readFile(this.path(key));
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async stream(key: string): Promise<BlobStream | undefined> {
    const path = this.path(key);
    try {
      const info = await stat(path);
      return { size: info.size, body: createReadStream(path) };
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }
}
