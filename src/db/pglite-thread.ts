/**
 * The main thread's side of the embedded database: starts PGlite in a
 * worker thread (src/db/pglite-worker.ts) and hands out socket-like streams
 * that carry the PostgreSQL wire protocol to it, so the `postgres` client
 * (the same one a PostgreSQL server is reached with) drives it. PGlite's
 * WebAssembly then never blocks the event loop that serves requests.
 *
 * `startPgliteThread` may be called before the rest of the service is
 * imported (src/main.ts does), so that PGlite opens on one core while the
 * other loads the code; `adoptPgliteThread` finds that thread again.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { Duplex } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { setFlagsFromString } from "node:v8";
import { Worker } from "node:worker_threads";
import type { DataDirProblem } from "./embedded-data-dir.js";
import type { FromWorker, PgliteWorkerData, ToWorker } from "./pglite-worker.js";
import { OTHER_SYNCS, WAL_SYNCS } from "./syncing-nodefs.js";

/** How the database opened: how its data directory was made, when this start made it. */
export interface Opened {
  created?: "template" | "initdb";
  /** Leftovers of interrupted first starts that this start removed. */
  removed: string[];
}

export interface PgliteThreadOptions {
  /** A commit is on disk before it is acknowledged (EMBEDDED_DATABASE_DURABLE); default true. */
  durable?: boolean;
  /** Tests only: where a first start stops (PgliteWorkerData.pauseAt), and what is told when it has. */
  pauseAt?: number | "complete";
  onPaused?: () => void;
}

/** The embedded database did not open; `problem`, when it is its data directory's, says what to do. */
export class EmbeddedDatabaseError extends Error {
  override name = "EmbeddedDatabaseError";
  constructor(
    message: string,
    readonly problem?: DataDirProblem,
  ) {
    super(message);
  }
}

export interface PgliteThread {
  readonly dataDir: string;
  /** Whether commits are flushed to disk before they are acknowledged. */
  readonly durable: boolean;
  /** Resolves once the database is open: with how its data directory was made, when this start made it. */
  readonly ready: Promise<Opened>;
  /** The flushes (fsync) the database has made so far: of WAL segments, and of other files. */
  syncs(): { wal: number; other: number };
  /** A new client connection (for the `postgres` client's `socket` option). */
  connect(): Duplex;
  /** Closes the database (after queued work) and ends the thread. */
  close(): Promise<void>;
}

/**
 * A worker running the build's module (dist/pglite-worker.js) or, from the
 * sources (tsx, tests), the TypeScript module through tsx's loader.
 */
function spawnWorker(workerData: PgliteWorkerData): Worker {
  limitWasmTierUp();
  // A small young generation: the thread's own garbage (message buffers) is
  // small and short-lived, and V8 otherwise sizes it from the machine's memory.
  const options = { workerData, resourceLimits: { maxYoungGenerationSizeMb: 4 } };
  const built = new URL("./pglite-worker.js", import.meta.url);
  if (existsSync(fileURLToPath(built))) return new Worker(built, options);
  // tsx's ESM API, registered in the worker itself (on Node 20 tsx's hooks
  // do not reach worker threads).
  const api = createRequire(import.meta.url)
    .resolve("tsx/esm/api")
    .replace(/\.cjs$/, ".mjs");
  const source = new URL("./pglite-worker.ts", import.meta.url).href;
  const boot = `import(${JSON.stringify(pathToFileURL(api).href)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}); });`;
  return new Worker(boot, { ...options, eval: true });
}

/**
 * V8 runs WebAssembly functions with its baseline compiler (Liftoff) and
 * recompiles the ones that get hot with its optimising compiler. For one of
 * PostgreSQL's functions that recompilation takes about 600 MB for a moment
 * (Turboshaft's SSA construction on a function of very many blocks and
 * variables), within seconds of every start: the process's peak RSS was
 * ~750 MB, and glibc's per-thread arenas kept 50-80 MB of it for good.
 * Recompilation is therefore off (the filter names a function index no
 * module has; `--liftoff-only` and `--no-wasm-tier-up` are only read when
 * node starts, the filter whenever a function gets hot): measured under
 * `npm run bench:calls`, the server's CPU per call rose ~5% and its RSS
 * after the run fell from ~420 to ~345 MB. A process-wide V8 flag (nothing
 * else here runs WebAssembly), set before the thread starts.
 */
function limitWasmTierUp(): void {
  setFlagsFromString("--wasm-tier-up-filter=1000000000");
}

let started: PgliteThread | undefined;

/** Starts PGlite on `dataDir` in a worker thread; `template` is copied into a new data directory first. */
export function startPgliteThread(
  dataDir: string,
  template?: string,
  options: PgliteThreadOptions = {},
): PgliteThread {
  const durable = options.durable ?? true;
  const counters = new Int32Array(new SharedArrayBuffer(8));
  const data: PgliteWorkerData = { dataDir, durable, syncs: counters };
  if (template !== undefined) data.template = template;
  if (options.pauseAt !== undefined) data.pauseAt = options.pauseAt;
  const worker = spawnWorker(data);
  const sockets = new Map<number, Duplex>();
  let nextConn = 1;
  let closing: Promise<void> | undefined;
  let exited = false;
  let opened = false;

  const ready = new Promise<Opened>((resolve, reject) => {
    worker.on("message", (message: FromWorker) => {
      switch (message.type) {
        case "ready":
          opened = true;
          resolve(
            message.created === undefined
              ? { removed: message.removed }
              : { created: message.created, removed: message.removed },
          );
          break;
        case "failed":
          reject(
            new EmbeddedDatabaseError(
              `the embedded database did not open: ${message.message}`,
              message.problem,
            ),
          );
          break;
        case "paused":
          options.onPaused?.();
          break;
        case "data":
          sockets
            .get(message.conn)
            ?.push(Buffer.from(message.bytes.buffer, message.bytes.byteOffset, message.bytes.length));
          break;
        case "error":
          sockets.get(message.conn)?.destroy(new Error(`embedded database: ${message.message}`));
          break;
        case "closed":
          break;
      }
    });
    worker.on("error", (err) => {
      reject(err);
      for (const s of sockets.values()) s.destroy(err);
    });
    worker.on("exit", (code) => {
      exited = true;
      const err = new Error(`the embedded database thread exited (${code})`);
      reject(err);
      for (const s of sockets.values()) s.destroy(err);
    });
  });
  // A failed start is reported by whoever awaits `ready`; never an unhandled rejection.
  ready.catch(() => {});

  const send = (message: ToWorker, transfer: ArrayBuffer[] = []) => worker.postMessage(message, transfer);

  const thread: PgliteThread = {
    dataDir,
    durable,
    ready,
    syncs: () => ({ wal: Atomics.load(counters, WAL_SYNCS), other: Atomics.load(counters, OTHER_SYNCS) }),
    connect() {
      const conn = nextConn++;
      // PGlite has one session: a second connection at once would interleave
      // its protocol messages with the first's (and lose, say, its unnamed
      // prepared statement). Refused loudly rather than corrupting quietly.
      const busy = sockets.size > 0;
      const socket = new Duplex({
        read() {},
        write(chunk: Buffer, _encoding, callback) {
          if (exited) {
            callback(new Error("the embedded database is closed"));
            return;
          }
          // A copy: the client's buffers may be views of a shared pool.
          const bytes = new Uint8Array(chunk);
          send({ type: "data", conn, bytes }, [bytes.buffer as ArrayBuffer]);
          callback();
        },
        // The client ending its side (after Terminate) closes the connection.
        final(callback) {
          callback();
          this.destroy();
        },
        destroy(err, callback) {
          sockets.delete(conn);
          callback(err);
        },
      });
      // What the `postgres` client uses of a net.Socket.
      Object.assign(socket, {
        setKeepAlive: () => socket,
        setNoDelay: () => socket,
        setTimeout: () => socket,
      });
      Object.defineProperty(socket, "readyState", { get: () => (socket.destroyed ? "closed" : "open") });
      if (busy) {
        // After the client has attached its listeners to the stream it was handed.
        setImmediate(() =>
          socket.destroy(
            new Error("the embedded database takes one connection at a time (PGlite has one session)"),
          ),
        );
        return socket;
      }
      sockets.set(conn, socket);
      return socket;
    },
    close() {
      closing ??= (async () => {
        if (!exited && !opened) {
          // Still opening (a first start still making its data directory,
          // perhaps): ended at once. What it leaves is either a complete data
          // directory or a leftover the next start removes (embedded-data-dir.ts).
          await worker.terminate();
        } else if (!exited) {
          const closed = new Promise<void>((resolve) => {
            const onMessage = (message: FromWorker) => {
              if (message.type === "closed") {
                worker.off("message", onMessage);
                resolve();
              }
            };
            worker.on("message", onMessage);
            worker.once("exit", () => resolve());
          });
          send({ type: "close" });
          await closed;
          await worker.terminate();
        }
        if (started === thread) started = undefined;
      })();
      return closing;
    },
  };
  started = thread;
  return thread;
}

/** The thread started last and not closed yet, if any (a stop that comes before the service is built closes it). */
export function startedPgliteThread(): PgliteThread | undefined {
  return started;
}

/** The thread started for `dataDir` ahead of the rest of the service, if any (taken once). */
export function adoptPgliteThread(dataDir: string): PgliteThread | undefined {
  const thread = started;
  if (thread === undefined || thread.dataDir !== dataDir) return undefined;
  return thread;
}
