/**
 * Moving recording audio from one blob store to another (the filesystem
 * store to a bucket: `switchboard recordings migrate-blobs`). Every
 * rendition of every recording in the database is looked for in the target
 * first: there with its size, it is skipped; otherwise it is read from the
 * source and put (a put is atomic, so a copy cut off leaves nothing half
 * written). So a run can be repeated, or stopped and run again, at no cost
 * but the look-ups; and one run per machine, each with its own source
 * directory, gathers the audio that several replicas kept on their disks.
 *
 * Audio in neither store is reported (`missing`): not on this machine, or
 * lost. Recordings are read in id order, a page at a time; one made while
 * the copy runs is copied if the walk has not passed its id (a later run
 * copies the rest).
 */
import { and, asc, gt, ne, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { recordings } from "../db/schema/index.js";
import type { BlobStore } from "./blobs.js";
import { recordingName } from "./names.js";

export interface MigrateProgress {
  /** Renditions looked at so far. */
  seen: number;
  /** Put into the target by this run. */
  copied: number;
  /** Bytes put by this run. */
  copiedBytes: number;
  /** In the target already, with their size. */
  present: number;
  /** In neither store. */
  missing: number;
  /** Recordings looked at so far. */
  recordings: number;
}

export interface MigrateOptions {
  db: Db;
  from: BlobStore;
  to: BlobStore;
  /** Look and count, copying nothing. */
  dryRun?: boolean;
  /** Recordings read per page. Default 100. */
  pageSize?: number;
  /** Told after every page, and of every rendition missing from both stores. */
  onProgress?: (progress: Readonly<MigrateProgress>) => void;
  onMissing?: (key: string, recording: string) => void;
}

export async function migrateBlobs(options: MigrateOptions): Promise<MigrateProgress> {
  const { db, from, to } = options;
  const pageSize = options.pageSize ?? 100;
  const progress: MigrateProgress = {
    seen: 0,
    copied: 0,
    copiedBytes: 0,
    present: 0,
    missing: 0,
    recordings: 0,
  };
  let after = "";
  for (;;) {
    const page = await db
      .select({
        id: recordings.id,
        projectId: recordings.projectId,
        callId: recordings.callId,
        renditions: recordings.renditions,
      })
      .from(recordings)
      .where(and(gt(recordings.id, after), ne(sql`jsonb_array_length(${recordings.renditions})`, 0)))
      .orderBy(asc(recordings.id))
      .limit(pageSize);
    if (page.length === 0) break;
    for (const row of page) {
      progress.recordings++;
      for (const rendition of row.renditions) {
        progress.seen++;
        const there = await to.size(rendition.blobKey);
        if (there !== undefined && there === rendition.sizeBytes) {
          progress.present++;
          continue;
        }
        const data = await from.get(rendition.blobKey);
        if (data === undefined) {
          progress.missing++;
          options.onMissing?.(rendition.blobKey, recordingName(row));
          continue;
        }
        if (!options.dryRun) await to.put(rendition.blobKey, data);
        progress.copied++;
        progress.copiedBytes += data.length;
      }
    }
    after = page[page.length - 1]!.id;
    options.onProgress?.(progress);
  }
  return progress;
}
