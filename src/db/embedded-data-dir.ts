/**
 * The embedded database's data directory on disk: made atomically on a
 * first start, and checked before PGlite is given it on later ones.
 *
 * A new data directory is filled beside its final place
 * (`pgdata.creating-<pid>-<random>`), from the build's template or by
 * initdb, flushed to disk, and renamed into place only when complete: an
 * interrupted first start (a signal, a kill, a power cut) leaves at most
 * such a sibling, never a half-made `pgdata`, and the next start removes it
 * and begins again. Nothing here ever deletes a directory it did not make:
 * a `pgdata` that exists but cannot be a database is reported, with what is
 * wrong and what the operator can do, and left as it is.
 */
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";

/** The infix of a data directory being made: `<dataDir>.creating-<pid>-<random>`. */
const CREATING = ".creating-";

/** Test hooks: called as a creation goes (the tests stop a first start at each point). */
export interface CreationHooks {
  /** After each file copied from the template, with the number copied so far (1, 2, ...). */
  onFile?: (copied: number) => void;
  /** Once the new directory is complete and flushed, just before it is renamed into place. */
  onComplete?: () => void;
}

export interface CreateOptions {
  /** The build's template, copied; without one `initdb` makes the directory. */
  template?: string | undefined;
  /** Runs initdb in the (empty, existing) directory given, and closes it. */
  initdb: (dir: string) => Promise<void>;
  /** Flushes every file and directory to disk before the rename, and the rename itself. */
  durable: boolean;
  hooks?: CreationHooks;
}

/** What a start found wrong with a data directory, for the log and the operator. */
export interface DataDirProblem {
  /** The data directory. */
  dataDir: string;
  /** What is wrong with it. */
  found: string;
  /** What the operator can do. */
  remedy: string;
}

/**
 * Removes what interrupted creations of `dataDir` left beside it (their
 * process gone), and returns their paths. A creation of a process still
 * running (another start on the same DATA_DIR) is left alone.
 */
export function removeInterruptedCreations(dataDir: string): string[] {
  const parent = dirname(dataDir);
  const prefix = `${basename(dataDir)}${CREATING}`;
  let entries: string[];
  try {
    entries = readdirSync(parent);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const entry of entries) {
    if (!entry.startsWith(prefix)) continue;
    const pid = Number(entry.slice(prefix.length).split("-")[0]);
    if (Number.isInteger(pid) && pid !== process.pid && alive(pid)) continue;
    const path = join(parent, entry);
    rmSync(path, { recursive: true, force: true });
    removed.push(path);
  }
  return removed;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, and is someone else's.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether `dataDir` is still to be made: missing, or an empty directory. */
export function isNew(dataDir: string): boolean {
  if (!existsSync(dataDir)) return true;
  return statSync(dataDir).isDirectory() && readdirSync(dataDir).length === 0;
}

/**
 * Makes `dataDir` (which `isNew`): fills a sibling from the template (or by
 * initdb), flushes it when `durable`, and renames it into place. Returns how
 * it was made.
 */
export async function createDataDir(dataDir: string, options: CreateOptions): Promise<"template" | "initdb"> {
  const parent = dirname(dataDir);
  mkdirSync(parent, { recursive: true });
  const work = join(parent, `${basename(dataDir)}${CREATING}${process.pid}-${randomSuffix()}`);
  mkdirSync(work);
  let created: "template" | "initdb";
  if (options.template !== undefined) {
    const counter = { copied: 0 };
    copyTree(options.template, work, counter, options.hooks?.onFile);
    created = "template";
  } else {
    await options.initdb(work);
    created = "initdb";
  }
  if (options.durable) syncTree(work);
  options.hooks?.onComplete?.();
  // rename(2) replaces an empty directory, and is atomic: `dataDir` is
  // either absent (or empty) or the complete directory.
  renameSync(work, dataDir);
  if (options.durable) syncPath(parent);
  return created;
}

function randomSuffix(): string {
  return Math.floor(Math.random() * 0x100000000)
    .toString(16)
    .padStart(8, "0");
}

/** Copies the tree under `from` into the existing directory `to`, file by file. */
function copyTree(
  from: string,
  to: string,
  counter: { copied: number },
  onFile?: (copied: number) => void,
): void {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) {
      mkdirSync(target);
      copyTree(source, target, counter, onFile);
    } else {
      copyFileSync(source, target);
      counter.copied++;
      onFile?.(counter.copied);
    }
  }
}

/** fsync every file and directory under `dir` (directories after their entries). */
function syncTree(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) syncTree(path);
    else syncPath(path);
  }
  syncPath(dir);
}

function syncPath(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** What every PostgreSQL data directory holds (initdb makes them; PostgreSQL refuses to start without them). */
const REQUIRED: readonly { path: string; directory: boolean }[] = [
  { path: "PG_VERSION", directory: false },
  { path: "postgresql.conf", directory: false },
  { path: "global/pg_control", directory: false },
  { path: "base", directory: true },
  { path: "pg_wal", directory: true },
  { path: "pg_xact", directory: true },
];

/** What an operator can do about a data directory that will not open. */
export function remedyFor(dataDir: string): string {
  return (
    `stop the service and move the directory aside (mv ${dataDir} ${dataDir}.broken); ` +
    "the next start creates a new, empty embedded database. Restore DATA_DIR from a backup to get the data back " +
    "(nothing was deleted: the directory is as it was found)"
  );
}

/**
 * Why `dataDir` (an existing, non-empty path) cannot be an embedded
 * database, or undefined when it has what one needs. Only what is plainly
 * missing: a directory that passes can still fail to open (PostgreSQL then
 * says why).
 */
export function checkDataDir(dataDir: string): DataDirProblem | undefined {
  const problem = (found: string): DataDirProblem => ({ dataDir, found, remedy: remedyFor(dataDir) });
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(dataDir);
  } catch (err) {
    return problem(`it cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  if (!stat.isDirectory()) return problem("it is not a directory");
  const missing = REQUIRED.filter(({ path, directory }) => {
    try {
      const s = statSync(join(dataDir, path));
      return directory ? !s.isDirectory() : !s.isFile();
    } catch {
      return true;
    }
  }).map(({ path }) => path);
  if (missing.length === REQUIRED.length) {
    return problem(
      `it is not empty but holds no PostgreSQL data directory (${missing.join(", ")} missing); ` +
        `it holds: ${listSome(dataDir)}`,
    );
  }
  if (missing.length > 0) {
    return problem(
      `an incomplete PostgreSQL data directory (${missing.join(", ")} missing), ` +
        "as an interrupted first start of an older version left it",
    );
  }
  return undefined;
}

/** The PostgreSQL major version a data directory was made by (its PG_VERSION), if readable. */
export function dataDirVersion(dataDir: string): string | undefined {
  try {
    return readFileSync(join(dataDir, "PG_VERSION"), "utf8").trim();
  } catch {
    return undefined;
  }
}

function listSome(dir: string): string {
  const names = readdirSync(dir).sort();
  const shown = names.slice(0, 5).join(", ");
  return names.length > 5 ? `${shown}, ... (${names.length} entries)` : shown;
}
