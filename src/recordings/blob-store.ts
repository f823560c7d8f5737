/**
 * The blob store the configuration names (BLOB_STORE): files under
 * BLOB_DIR, or an S3-compatible bucket, checked before the service starts
 * (a store that cannot be used stops the start with a message naming what
 * is wrong). The S3 client is loaded only when the bucket is used.
 */
import type { RecordingsConfig, S3Config } from "../config.js";
import { type BlobStore, FileBlobStore } from "./blobs.js";
import type { S3BlobStore } from "./s3-blobs.js";

/** A blob store and how to release it. */
export interface OpenedBlobStore {
  store: BlobStore;
  /** For logs: `filesystem` and the directory, or `s3` and the bucket. */
  describe: Record<string, string>;
  close(): void;
}

/** The bucket of `config`, checked (BlobStoreUnavailable when it cannot be used). */
export async function openS3BlobStore(config: S3Config): Promise<S3BlobStore> {
  const { S3BlobStore } = await import("./s3-blobs.js");
  const store = new S3BlobStore(config);
  try {
    await store.check();
  } catch (err) {
    store.close();
    throw err;
  }
  return store;
}

export async function openBlobStore(config: RecordingsConfig): Promise<OpenedBlobStore> {
  if (config.blobStore === "s3" && config.s3 !== undefined) {
    const store = await openS3BlobStore(config.s3);
    return {
      store,
      describe: {
        blobStore: "s3",
        bucket: config.s3.bucket,
        endpoint: config.s3.endpoint ?? `aws:${config.s3.region}`,
      },
      close: () => store.close(),
    };
  }
  return {
    store: new FileBlobStore(config.blobDir),
    describe: { blobStore: "filesystem", blobDir: config.blobDir },
    close: () => {},
  };
}
