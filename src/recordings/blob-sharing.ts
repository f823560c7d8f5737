/**
 * Telling the operator when recording audio is on one machine's disk while
 * other replicas serve it. With the filesystem store (BLOB_STORE=filesystem)
 * a recording's audio is in the BLOB_DIR of the replica that recorded it;
 * replicas that do not share that directory (other machines, or other data
 * directories) answer its download links with 404.
 *
 * Each replica on the filesystem store leaves a marker, `replicas/{engine
 * id}`, in its BLOB_DIR from start to stop. A replica whose call engine is
 * registered and alive in the database (`call_engines`, src/voice/calls/
 * liveness.ts) but has no marker here keeps its audio somewhere else (or
 * uses another store): this replica logs a warning naming BLOB_STORE, at
 * start and when another such replica appears, and /readyz carries it in
 * its details (looked up again at most every 5 s). It names engines, not
 * hosts: `call_engines` records no host, and a marker says more (two data
 * directories on one host are just as unshared).
 */
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gte } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { callEngines } from "../db/schema/index.js";
import type { Logger } from "../log.js";

/** How long a look-up is reused by /readyz. */
const CACHE_MS = 5_000;

/** A /readyz detail: something the operator should change, and the setting to change. */
export interface ReadinessDetail {
  reason: string;
  setting: string;
  message: string;
  [key: string]: unknown;
}

export interface BlobSharingOptions {
  db: Db;
  log: Logger;
  blobDir: string;
  /** This replica's engine id. */
  engineId: string;
  /** ENGINE_HEARTBEAT_SECONDS: an engine silent for 3 intervals is not alive (0: any registered one is). */
  heartbeatSeconds: number;
}

export class BlobSharingCheck {
  private readonly markers: string;
  private cached: { at: number; unshared: string[] } | undefined;
  private readonly warned = new Set<string>();

  constructor(private readonly options: BlobSharingOptions) {
    this.markers = join(options.blobDir, "replicas");
  }

  /** Leaves this replica's marker and looks once (warning when another replica does not share BLOB_DIR). */
  async start(): Promise<void> {
    await mkdir(this.markers, { recursive: true });
    await writeFile(join(this.markers, this.options.engineId), `${new Date().toISOString()}\n`);
    await this.unshared();
  }

  /** Removes this replica's marker. */
  async stop(): Promise<void> {
    await rm(join(this.markers, this.options.engineId), { force: true });
  }

  /** The live engines (other than this one) without a marker in this BLOB_DIR. */
  async unshared(): Promise<string[]> {
    const now = Date.now();
    if (this.cached !== undefined && now - this.cached.at < CACHE_MS) return this.cached.unshared;
    const { heartbeatSeconds } = this.options;
    const cutoff = heartbeatSeconds > 0 ? new Date(now - 3 * heartbeatSeconds * 1000) : new Date(0);
    const rows = await this.options.db
      .select({ id: callEngines.id })
      .from(callEngines)
      .where(gte(callEngines.heartbeatTime, cutoff));
    const here = new Set(await readdir(this.markers).catch(() => [] as string[]));
    const unshared = rows
      .map((r) => r.id)
      .filter((id) => id !== this.options.engineId && !here.has(id))
      .sort();
    this.cached = { at: now, unshared };
    const fresh = unshared.filter((id) => !this.warned.has(id));
    if (fresh.length > 0) {
      for (const id of fresh) this.warned.add(id);
      this.options.log.warn(
        { setting: "BLOB_STORE", blobDir: this.options.blobDir, engines: fresh },
        `${message(this.options.blobDir)}`,
      );
    }
    return unshared;
  }

  /** The /readyz details: one when some replica does not share BLOB_DIR, none otherwise (or when the database fails). */
  async details(): Promise<ReadinessDetail[]> {
    let unshared: string[];
    try {
      unshared = await this.unshared();
    } catch {
      return [];
    }
    if (unshared.length === 0) return [];
    return [
      {
        reason: "FILESYSTEM_BLOB_STORE_NOT_SHARED",
        setting: "BLOB_STORE",
        message: message(this.options.blobDir),
        engines: unshared,
      },
    ];
  }
}

function message(blobDir: string): string {
  return (
    `another replica registered in the database does not share this replica's BLOB_DIR (${blobDir}): ` +
    "recording audio stored by one replica cannot be downloaded through the other; " +
    "set BLOB_STORE=s3 (and the S3_* settings) on every replica, or give them all one shared BLOB_DIR"
  );
}
