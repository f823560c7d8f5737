/**
 * The blob store on an S3-compatible bucket (BLOB_STORE=s3): each blob an
 * object, its key the blob key after S3_KEY_PREFIX. `put` is one PutObject
 * (atomic: a reader sees the old object or the new), `stream` a plain or
 * ranged GetObject, `size` a HeadObject, `delete` a DeleteObject (missing
 * is fine, as S3 has it). Every replica pointed at the bucket reads what
 * any of them wrote.
 *
 * The client is the AWS SDK's (@aws-sdk/client-s3), set for the stores that
 * speak the protocol without AWS's newest extensions (MinIO, Ceph RGW,
 * Cloudflare R2, ...): checksums only where an operation requires one. A
 * request that fails on the way (the network, a 5xx, throttling) or takes
 * longer than S3_REQUEST_TIMEOUT_MS is tried again by the client, 3
 * attempts in all; then the call fails (a recording whose audio cannot be
 * stored ends FAILED INTERNAL_ERROR, as with the filesystem store).
 *
 * `check()` (at start) asks for the bucket (HeadBucket) and says plainly
 * what is wrong: the endpoint unreachable, the bucket missing, the
 * credentials refused.
 */
import type { Readable } from "node:stream";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import type { S3Config } from "../config.js";
import { type BlobStore, type BlobStream, checkBlobKey } from "./blobs.js";
import {
  type ByteRange,
  RangeNotSatisfiable,
  type RangeRequest,
  rangeHeader,
  resolveRange,
} from "./ranges.js";

/** The bucket cannot be used: what is wrong, in words that name the setting to look at. */
export class BlobStoreUnavailable extends Error {
  override name = "BlobStoreUnavailable";
}

const MAX_ATTEMPTS = 3;

/** The HTTP status of an S3 error reply, or undefined when no reply came. */
function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

function isNotFound(err: unknown): boolean {
  const name = (err as { name?: string } | undefined)?.name;
  return name === "NoSuchKey" || name === "NotFound" || statusOf(err) === 404;
}

/** `bytes 0-99/1000` -> the range and the whole size. */
function parseContentRange(value: string | undefined): { range: ByteRange; size: number } | undefined {
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(value ?? "");
  if (m === null) return undefined;
  return { range: { start: Number(m[1]), end: Number(m[2]) }, size: Number(m[3]) };
}

export class S3BlobStore implements BlobStore {
  readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(private readonly config: S3Config) {
    this.bucket = config.bucket;
    this.prefix = config.keyPrefix;
    this.client = new S3Client({
      region: config.region,
      ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
      ...(config.credentials === undefined ? {} : { credentials: config.credentials }),
      forcePathStyle: config.forcePathStyle,
      maxAttempts: MAX_ATTEMPTS,
      // Checksums only where required: stores other than AWS S3 may refuse the newer ones.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      requestHandler: {
        connectionTimeout: Math.min(config.requestTimeoutMs, 10_000),
        requestTimeout: config.requestTimeoutMs,
      },
    });
  }

  /** Where the bucket is, for messages and logs (never the credentials). */
  get where(): string {
    return `bucket ${JSON.stringify(this.bucket)} at ${this.config.endpoint ?? `AWS S3 (${this.config.region})`}`;
  }

  private objectKey(key: string): string {
    checkBlobKey(key);
    return `${this.prefix}${key}`;
  }

  /** Throws BlobStoreUnavailable, naming what is wrong, unless the bucket answers. */
  async check(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      throw new BlobStoreUnavailable(this.explain(err), { cause: err });
    }
  }

  private explain(err: unknown): string {
    const status = statusOf(err);
    const e = err as { name?: string; code?: string; message?: string };
    // A HEAD's error reply has no body: the SDK names it Unknown (or by its status).
    const named = e.code ?? e.name;
    const detail = named === undefined || named === "Unknown" || /^\d+$/.test(named) ? "" : ` ${named}`;
    if (e.name === "CredentialsProviderError") {
      return `BLOB_STORE=s3: no credentials for ${this.where}: set S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY (or give the AWS SDK its own: AWS_* variables, a profile, an instance or task role)`;
    }
    if (status === undefined || !(err instanceof S3ServiceException)) {
      const endpoint = this.config.endpoint ?? `AWS S3's endpoint for ${this.config.region}`;
      return `BLOB_STORE=s3: cannot reach S3_ENDPOINT ${endpoint} (${detail.trim() || "error"}: ${e.message ?? ""}); check S3_ENDPOINT and that the store is running`;
    }
    if (status === 404) {
      return `BLOB_STORE=s3: S3_BUCKET ${JSON.stringify(this.bucket)} does not exist at ${this.config.endpoint ?? "AWS S3"}; create it, or fix S3_BUCKET (or S3_FORCE_PATH_STYLE)`;
    }
    if (status === 401 || status === 403) {
      return `BLOB_STORE=s3: the store refused the credentials for ${this.where} (HTTP ${status}${detail}); check S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY, and that they may use the bucket`;
    }
    if (status === 301 || status === 400) {
      return `BLOB_STORE=s3: the store refused the request for ${this.where} (HTTP ${status}${detail}); check S3_REGION and S3_FORCE_PATH_STYLE`;
    }
    return `BLOB_STORE=s3: the store answered HTTP ${status}${detail} for ${this.where}`;
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.objectKey(key),
        Body: data,
        ContentLength: data.length,
      }),
    );
  }

  async get(key: string): Promise<Buffer | undefined> {
    const blob = await this.stream(key);
    if (blob === undefined) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of blob.body) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  async stream(key: string, range?: RangeRequest): Promise<BlobStream | undefined> {
    const Key = this.objectKey(key);
    if (range !== undefined && "suffix" in range) {
      // The last N bytes, asked for as an explicit range: not every store serves suffix ranges.
      const size = await this.size(key);
      if (size === undefined) return undefined;
      const { start, end } = resolveRange(range, size);
      return this.stream(key, { first: start, last: end });
    }
    try {
      const out = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key,
          ...(range === undefined ? {} : { Range: rangeHeader(range) }),
        }),
      );
      const body = out.Body as Readable;
      const part = parseContentRange(out.ContentRange);
      if (range !== undefined && part !== undefined && out.$metadata.httpStatusCode === 206) {
        return { size: part.size, body, range: part.range };
      }
      // The whole object (no range asked, or the store answered with all of it).
      return { size: out.ContentLength ?? 0, body };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      if (statusOf(err) === 416) {
        const size = await this.size(key);
        if (size === undefined) return undefined;
        throw new RangeNotSatisfiable(size);
      }
      throw err;
    }
  }

  async size(key: string): Promise<number | undefined> {
    try {
      const out = await this.client.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }),
      );
      return out.ContentLength ?? 0;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
  }

  /** Closes the client's connections. */
  close(): void {
    this.client.destroy();
  }
}
