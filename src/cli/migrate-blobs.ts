/**
 * `switchboard recordings migrate-blobs`: copies recording audio from the
 * filesystem blob store into the S3 bucket (src/recordings/migrate-blobs.ts).
 * It runs where the audio is, with the settings a replica runs with (the
 * same environment: DATABASE_URL or DATA_DIR, BLOB_DIR, the S3_* settings),
 * talking to the database and the bucket itself; no server is called.
 * Repeatable and resumable; exit code 1 while some audio is in neither place.
 *
 * The one command that runs server code: loaded (dynamic imports) only when
 * it runs, so the CLI's start and help stay free of it.
 */
import { existsSync, statSync } from "node:fs";
import { str } from "./args.js";
import { type Command, UsageError } from "./command.js";

const NAME = "recordings migrate-blobs";

function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

export const migrateBlobsCommand: Command = {
  path: ["recordings", "migrate-blobs"],
  summary: "Copy recording audio from BLOB_DIR into the S3 bucket (runs here, on the service's settings)",
  options: {
    "from-dir": {
      type: "string",
      value: "DIR",
      description: "the filesystem store to copy from (default BLOB_DIR, else $DATA_DIR/blobs)",
    },
    "dry-run": { type: "boolean", description: "count what would be copied; copy nothing" },
  },
  description: [
    "Run it with the environment a replica runs with (DATABASE_URL, or DATA_DIR on the",
    "embedded database with the service stopped; BLOB_DIR; S3_BUCKET and the other S3_*",
    "settings of the bucket, BLOB_STORE aside), on each machine whose BLOB_DIR holds audio.",
    "Every rendition of every recording in the database is looked for in the bucket and",
    "copied when it is not there with its size: run it again at any time, or after an",
    "interruption, and it copies only what is left. Exit code 0 when every recording's",
    "audio is in the bucket, 1 while some is in neither place (see the lines 'missing').",
  ].join("\n"),
  examples: [
    "switchboard recordings migrate-blobs --dry-run",
    "switchboard recordings migrate-blobs --from-dir /data/blobs",
  ],
  async runLocal({ values, env, out }) {
    const { ConfigError, loadConfig } = await import("../config.js");
    let config: ReturnType<typeof loadConfig>;
    try {
      config = loadConfig(env);
    } catch (err) {
      if (err instanceof ConfigError) throw new UsageError(err.message, NAME);
      throw err;
    }
    const s3 = config.recordings.s3;
    if (s3 === undefined) {
      throw new UsageError("set S3_BUCKET (and the other S3_* settings) to the bucket to copy into", NAME);
    }
    const fromDir = str(values, "from-dir") ?? config.recordings.blobDir;
    if (!existsSync(fromDir) || !statSync(fromDir).isDirectory()) {
      throw new UsageError(`${fromDir} is not a directory (--from-dir, BLOB_DIR)`, NAME);
    }
    const { embeddedDataDir } = await import("../db/location.js");
    if (config.databaseUrl === undefined && !existsSync(embeddedDataDir(config.dataDir))) {
      throw new UsageError(
        `no embedded database in ${config.dataDir} (set DATA_DIR, or DATABASE_URL for PostgreSQL)`,
        NAME,
      );
    }
    const [{ openS3BlobStore }, { FileBlobStore }, { openDatabase }, { migrateBlobs }] = await Promise.all([
      import("../recordings/blob-store.js"),
      import("../recordings/blobs.js"),
      import("../db/client.js"),
      import("../recordings/migrate-blobs.js"),
    ]);
    const to = await openS3BlobStore(s3);
    const dryRun = values["dry-run"] === true;
    out(
      `${dryRun ? "dry run: counting" : "copying"} recording audio from ${fromDir} into ${to.where}${s3.keyPrefix ? ` under ${s3.keyPrefix}` : ""}`,
    );
    let database: Awaited<ReturnType<typeof openDatabase>> | undefined;
    try {
      database = await openDatabase(config);
      const verb = dryRun ? "to copy" : "copied";
      const line = (p: {
        recordings: number;
        seen: number;
        copied: number;
        copiedBytes: number;
        present: number;
        missing: number;
      }) =>
        `recordings ${p.recordings}, renditions ${p.seen}: ${verb} ${p.copied} (${megabytes(p.copiedBytes)}), already in the bucket ${p.present}, missing ${p.missing}`;
      const done = await migrateBlobs({
        db: database.db,
        from: new FileBlobStore(fromDir),
        to,
        dryRun,
        onProgress: (p) => out(line(p)),
        onMissing: (key, recording) =>
          out(`missing: ${key} (${recording}) is neither in ${fromDir} nor in the bucket`),
      });
      out(`done: ${line(done)}`);
      if (done.missing > 0) {
        out(
          `${done.missing} rendition(s) are in neither place: run this on each machine whose BLOB_DIR may hold them`,
        );
        return 1;
      }
      return 0;
    } finally {
      await database?.close();
      to.close();
    }
  },
};
