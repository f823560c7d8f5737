/**
 * The blob store: opaque byte strings by key. Recordings keep their audio
 * here; rows in the database hold only the keys.
 *
 * Keys are relative paths of `[A-Za-z0-9._-]` segments separated by `/`
 * (`recordings/{project}/{recording}.wav`); no segment is empty, `.` or
 * `..`. `put` replaces atomically (a reader sees the old bytes or the new,
 * never a part); `delete` of a missing key is not an error.
 *
 * `stream` may be asked for a byte range (ranges.ts): it then streams that
 * part, and `size` is still the whole blob's.
 *
 * FileBlobStore keeps each blob as a file under a directory (BLOB_DIR,
 * default `<DATA_DIR>/blobs`); fine for one machine or a shared volume.
 * S3BlobStore (s3-blobs.ts, BLOB_STORE=s3) keeps them as objects in one
 * bucket, for replicas on several machines.
 */

import { randomBytes } from "node:crypto";
import { type FileHandle, mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Readable } from "node:stream";
import { type ByteRange, type RangeRequest, resolveRange } from "./ranges.js";

export interface BlobStream {
  /** The whole blob's size in bytes. */
  size: number;
  /** The bytes: all of them, or those of `range`. */
  body: Readable;
  /** The part `body` holds, when a range was asked for. */
  range?: ByteRange;
}

export interface BlobStore {
  put(key: string, data: Uint8Array): Promise<void>;
  /** The bytes, or undefined when there is no such blob. */
  get(key: string): Promise<Buffer | undefined>;
  /**
   * A stream of the bytes (or of `range` of them: RangeNotSatisfiable when
   * the blob has none of it) with their size, or undefined when there is no
   * such blob.
   */
  stream(key: string, range?: RangeRequest): Promise<BlobStream | undefined>;
  /** The size in bytes, or undefined when there is no such blob. */
  size(key: string): Promise<number | undefined>;
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

  async stream(key: string, range?: RangeRequest): Promise<BlobStream | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(this.path(key), "r");
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
    // The size of the file opened (a put meanwhile replaces the name, not this file).
    let size: number;
    let part: ByteRange | undefined;
    try {
      size = (await handle.stat()).size;
      part = range === undefined ? undefined : resolveRange(range, size);
    } catch (err) {
      await handle.close();
      throw err;
    }
    const body = handle.createReadStream(part === undefined ? {} : { start: part.start, end: part.end });
    return { size, body, ...(part === undefined ? {} : { range: part }) };
  }

  async size(key: string): Promise<number | undefined> {
    try {
      return (await stat(this.path(key))).size;
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }
}
