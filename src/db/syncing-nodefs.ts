/**
 * PGlite's Node filesystem with a working fsync.
 *
 * PGlite runs PostgreSQL on Emscripten's NODEFS, whose file operations
 * become Node's (fs.openSync, fs.writeSync, ...) on the real data directory.
 * But its `fsync` reaches nothing: NODEFS has no `fsync` operation (libc's
 * fsync() returns 0 having done nothing), and fdatasync() is a stub. So
 * even with PostgreSQL's `fsync=on` a commit would only reach the operating
 * system's page cache. This filesystem gives NODEFS the operation it lacks:
 * PostgreSQL's fsync() of a file or a directory is Node's fs.fsyncSync on
 * the real file descriptor. With `wal_sync_method=fsync` (fdatasync() stays
 * a stub) that is the WAL flush of every commit, and the data files' flush
 * at each checkpoint (src/db/pglite-worker.ts sets both).
 *
 * Each flush is counted, for the tests and for anyone measuring: slot 0 of
 * `counters` counts flushes of WAL files (pg_wal/), slot 1 every other one.
 */
import { fsyncSync } from "node:fs";
import type { PGlite } from "@electric-sql/pglite";
import { NodeFS } from "@electric-sql/pglite/nodefs";

/** The slots of the counters: flushes of WAL segments, and of everything else. */
export const WAL_SYNCS = 0;
export const OTHER_SYNCS = 1;

/** The parts of Emscripten's module this uses (PGlite's typings do not describe NODEFS). */
interface EmscriptenModule {
  NODEFS: {
    stream_ops: { fsync?: (stream: { nfd: number; node: unknown }) => number };
    realPath(node: unknown): string;
  };
}

type InitResult = Awaited<ReturnType<NodeFS["init"]>>;

export class SyncingNodeFS extends NodeFS {
  /** `counters`: an Int32Array of two slots (shared memory, so another thread may read it). */
  constructor(
    dataDir: string,
    private readonly counters: Int32Array,
  ) {
    super(dataDir);
  }

  override async init(pg: PGlite, opts: Parameters<NodeFS["init"]>[1]): Promise<InitResult> {
    const result = await super.init(pg, opts);
    const counters = this.counters;
    const preRun = result.emscriptenOpts.preRun;
    const install = (module: unknown) => {
      const nodefs = (module as EmscriptenModule).NODEFS;
      nodefs.stream_ops.fsync = (stream) => {
        try {
          fsyncSync(stream.nfd);
        } catch {
          // WASI's EIO: PostgreSQL's fsync() fails, and it stops rather than
          // go on over data it cannot know is on disk (data_sync_retry=off).
          return 29;
        }
        const wal = /\/pg_wal\/[0-9A-F]{24}$/.test(nodefs.realPath(stream.node));
        Atomics.add(counters, wal ? WAL_SYNCS : OTHER_SYNCS, 1);
        return 0;
      };
    };
    result.emscriptenOpts.preRun = [...(Array.isArray(preRun) ? preRun : preRun ? [preRun] : []), install];
    return result;
  }
}
