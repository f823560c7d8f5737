/**
 * The embedded database's thread: PGlite (PostgreSQL compiled to
 * WebAssembly) runs here, off the main event loop, and speaks the
 * PostgreSQL wire protocol to the main thread (src/db/pglite-thread.ts),
 * where an ordinary `postgres` client talks to it as to a server.
 *
 * Messages from the main thread:
 * - `{ type: "data", conn, bytes }`: bytes a client connection wrote. They
 *   are cut into whole protocol messages (a write may hold several, or part
 *   of one) and run in order through `execProtocolRaw`; what PGlite answers
 *   goes back as `{ type: "data", conn, bytes }`.
 * - `{ type: "close" }`: closes PGlite (after every queued message) and
 *   answers `{ type: "closed" }`.
 * It posts `{ type: "ready", created }` once the database is open, or
 * `{ type: "failed", message }`.
 *
 * PGlite has a single session: every connection shares it. The main side
 * opens one connection at a time (a pool of one), as PGlite's own client
 * would.
 */
import { existsSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { PGlite } from "@electric-sql/pglite";
import {
  checkDataDir,
  createDataDir,
  type DataDirProblem,
  dataDirVersion,
  isNew,
  remedyFor,
  removeInterruptedCreations,
} from "./embedded-data-dir.js";
import { SyncingNodeFS } from "./syncing-nodefs.js";

export interface PgliteWorkerData {
  /** The PostgreSQL data directory. */
  dataDir: string;
  /** A data directory to copy into an empty `dataDir` first (the build's template). */
  template?: string;
  /**
   * Whether a commit is on disk before it is acknowledged (EMBEDDED_DATABASE_DURABLE):
   * PostgreSQL's fsync on, through a filesystem whose fsync reaches the disk.
   */
  durable: boolean;
  /** Two Int32 slots of shared memory where the flushes are counted (src/db/syncing-nodefs.ts). */
  syncs: Int32Array;
  /**
   * Tests only: stop a first start after this many files of the template are
   * copied, or once the new directory is complete but not yet renamed into
   * place ("complete"), posting `{ type: "paused" }`; the thread then waits
   * for ever (a test kills or stops the process there).
   */
  pauseAt?: number | "complete";
}

export type ToWorker = { type: "data"; conn: number; bytes: Uint8Array } | { type: "close" };
export type FromWorker =
  | { type: "ready"; created?: "template" | "initdb"; removed: string[] }
  | { type: "failed"; message: string; problem?: DataDirProblem }
  | { type: "paused" }
  | { type: "data"; conn: number; bytes: Uint8Array }
  | { type: "error"; conn: number; message: string }
  | { type: "closed" };

/** PostgreSQL frontend message types that must never reach the shared session. */
const TERMINATE = 0x58; // 'X': a client ending its connection; the session lives on.

const port = parentPort;
if (port === null) throw new Error("pglite-worker runs as a worker thread");
const post = (message: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

const { dataDir, template, durable, syncs, pauseAt } = workerData as PgliteWorkerData;

/**
 * PostgreSQL settings the embedded database starts with, after PGlite's own
 * (single-user mode, no parallel workers; its `-F`, fsync off, is replaced by
 * `durabilitySettings`). PGlite allocates and
 * touches all of shared memory when it opens, so `shared_buffers` is resident
 * from the first second: the data directory's postgresql.conf says 128MB
 * (initdb's default, sized for a server with many sessions), which was most
 * of the process's idle memory. One session over a small database needs far
 * less; pages beyond it are read back from the operating system's file cache.
 */
export const EMBEDDED_SETTINGS: readonly string[] = [
  "shared_buffers=12MB",
  // PGlite runs one backend (single-user mode), no autovacuum workers and no
  // WAL senders: shared state sized for them (PGPROCs, the lock table) is
  // never used.
  "max_connections=4",
  "autovacuum_worker_slots=1",
  "max_wal_senders=0",
  "max_replication_slots=0",
];

/**
 * Durable (EMBEDDED_DATABASE_DURABLE, the default): fsync on, and the WAL
 * flushed with fsync(), the call src/db/syncing-nodefs.ts makes reach the
 * disk (fdatasync(), PostgreSQL's default on Linux, does nothing under
 * Emscripten). synchronous_commit stays on: COMMIT returns once its WAL is
 * flushed, and so the answer a client gets comes after it. Not durable:
 * PGlite's own default, fsync off (`-F`): nothing is flushed, a commit is in
 * the operating system's page cache when it is acknowledged.
 */
function durabilitySettings(durable: boolean): string[] {
  return durable ? ["fsync=on", "wal_sync_method=fsync"] : ["fsync=off"];
}

/** PGlite's start parameters with the embedded database's settings (its `-F` left out: see durabilitySettings). */
function startParams(durable: boolean): string[] {
  const pglite = PGlite.defaultStartParams.filter((p) => p !== "-F");
  return [...pglite, ...[...EMBEDDED_SETTINGS, ...durabilitySettings(durable)].flatMap((s) => ["-c", s])];
}

/** Per connection: bytes not yet forming a whole message, and whether the startup message was seen. */
const connections = new Map<number, { pending: Buffer; started: boolean }>();
/** Messages run one after another, in arrival order, whatever the connection. */
let queue: Promise<void> = Promise.resolve();

/** Cuts the whole messages off the front of a connection's bytes. */
function wholeMessages(state: { pending: Buffer; started: boolean }): Buffer[] {
  const out: Buffer[] = [];
  let buf = state.pending;
  for (;;) {
    // The startup message (and SSL or cancel requests) has no type byte.
    const header = state.started ? 5 : 4;
    if (buf.length < header) break;
    const length = state.started ? buf.readInt32BE(1) + 1 : buf.readInt32BE(0);
    if (buf.length < length) break;
    const message = buf.subarray(0, length);
    buf = buf.subarray(length);
    if (state.started && message[0] === TERMINATE) continue;
    out.push(message);
    state.started = true;
  }
  state.pending = buf;
  return out;
}

function concat(chunks: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const c of chunks) length += c.length;
  const out = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** A start that cannot open the data directory: reported with what was found and what to do. */
class DataDirError extends Error {
  constructor(readonly problem: DataDirProblem) {
    super(`the embedded database's data directory cannot be opened: ${problem.found}`);
  }
}

/** Test hook (pauseAt): tells the main thread, then waits for ever. */
function pause(): void {
  post({ type: "paused" });
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}

const openPglite = (dir: string) =>
  PGlite.create({ fs: new SyncingNodeFS(dir, syncs), startParams: startParams(durable) });

async function open(): Promise<{ db: PGlite; created?: "template" | "initdb"; removed: string[] }> {
  const removed = removeInterruptedCreations(dataDir);
  let created: "template" | "initdb" | undefined;
  if (isNew(dataDir)) {
    created = await createDataDir(dataDir, {
      template: template !== undefined && existsSync(template) ? template : undefined,
      durable,
      initdb: async (dir) => {
        await (await openPglite(dir)).close();
      },
      hooks: {
        onFile: (copied) => {
          if (copied === pauseAt) pause();
        },
        onComplete: () => {
          if (pauseAt === "complete") pause();
        },
      },
    });
  } else {
    const problem = checkDataDir(dataDir);
    if (problem !== undefined) throw new DataDirError(problem);
  }
  let db: PGlite;
  try {
    db = await openPglite(dataDir);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const version = dataDirVersion(dataDir);
    throw new DataDirError({
      dataDir,
      found: `PostgreSQL${version === undefined ? "" : ` (the directory is of PostgreSQL ${version})`} could not open it: ${message}`,
      remedy: remedyFor(dataDir),
    });
  }
  // A new backend's first queries load its catalog caches (half a second);
  // here that overlaps the main thread loading the service. This is the
  // query the `postgres` client runs when it connects.
  await db.query(
    "select b.oid, b.typarray from pg_catalog.pg_type a left join pg_catalog.pg_type b on b.oid = a.typelem where a.typcategory = 'A' group by b.oid, b.typarray order by b.oid",
  );
  // PGlite does a few hundred milliseconds of work of its own right after
  // its first query (seen as the next timer's lateness): let it happen now,
  // still overlapping the service's load, rather than delay the first request.
  await new Promise((resolve) => setTimeout(resolve, 0));
  return created === undefined ? { db, removed } : { db, created, removed };
}

try {
  const { db, created, removed } = await open();
  port.on("message", (message: ToWorker) => {
    if (message.type === "close") {
      queue = queue.then(async () => {
        await db.close();
        post({ type: "closed" });
      });
      return;
    }
    let state = connections.get(message.conn);
    if (state === undefined) {
      state = { pending: Buffer.alloc(0), started: false };
      connections.set(message.conn, state);
    }
    state.pending = Buffer.concat([state.pending, message.bytes]);
    const messages = wholeMessages(state);
    if (messages.length === 0) return;
    const input = messages.length === 1 ? messages[0]! : Buffer.concat(messages);
    const conn = message.conn;
    queue = queue.then(async () => {
      try {
        // The stream form hands over PGlite's output as it is written (views
        // of its memory, copied here once). execProtocolRaw would also parse
        // every answer into JavaScript messages, and keep them: its result
        // list is only reset by PGlite's own query methods, so over the raw
        // protocol it grew by every row the service ever read.
        const chunks: Uint8Array[] = [];
        await db.execProtocolRawStream(new Uint8Array(input.buffer, input.byteOffset, input.length), {
          onRawData: (data) => {
            chunks.push(data.slice());
          },
        });
        const bytes = chunks.length === 1 ? chunks[0]! : concat(chunks);
        if (bytes.length > 0) post({ type: "data", conn, bytes }, [bytes.buffer as ArrayBuffer]);
      } catch (err) {
        post({ type: "error", conn, message: err instanceof Error ? err.message : String(err) });
      }
    });
  });
  post(created === undefined ? { type: "ready", removed } : { type: "ready", created, removed });
} catch (err) {
  const message = err instanceof Error ? err.message : String(err);
  post(
    err instanceof DataDirError
      ? { type: "failed", message, problem: err.problem }
      : { type: "failed", message },
  );
}
