/**
 * Headless Chromium for the browser tests, from npm: `@sparticuz/chromium`
 * ships a Chromium build (brotli-compressed, extracted to /tmp/chromium on
 * first use, ~2 s), so the tests need nothing but Node and npm. When
 * `CHROMIUM_PATH` is set, that executable is used instead (a Debian
 * `chromium`, for instance). playwright-core drives either.
 *
 * The flags are chosen here, not taken from `chromium.args`: those include
 * `--disable-web-security`, which would switch off the very CORS checks the
 * browser tests assert.
 *
 * The npm build reuses /tmp/chromium whenever that file exists, even half
 * written by a parallel test file or left by another version: extraction
 * runs under a lock shared by every process (a directory in /tmp) and is
 * redone when /tmp/chromium.version names another version of the package.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type Browser, chromium } from "playwright-core";

export const CHROMIUM_ARGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-proxy-server",
  "--no-zygote",
  "--single-process",
];

/** The Chromium executable: `CHROMIUM_PATH`, or the npm build (extracted on first call). */
export async function chromiumExecutable(): Promise<string> {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv) return fromEnv;
  return withExtractionLock(async () => {
    const { default: sparticuz } = await import("@sparticuz/chromium");
    const version = packageVersion();
    const binary = join(tmpdir(), "chromium");
    const marker = join(tmpdir(), "chromium.version");
    // No marker: extracted before this helper existed; taken as it is.
    const extracted = existsSync(marker) ? readFileSync(marker, "utf8") : version;
    if (existsSync(binary) && extracted !== version) rmSync(binary, { force: true });
    const path = await sparticuz.executablePath();
    writeFileSync(marker, version);
    return path;
  });
}

function packageVersion(): string {
  const entry = createRequire(import.meta.url).resolve("@sparticuz/chromium");
  const pkg = JSON.parse(readFileSync(join(dirname(entry), "..", "package.json"), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

/** Runs `fn` holding a lock shared by every process of the machine (a directory in /tmp). */
async function withExtractionLock<T>(fn: () => Promise<T>): Promise<T> {
  const lock = join(tmpdir(), "chromium.extract.lock");
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    // A lock older than two minutes belongs to a process that died extracting.
    const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if (age > 120_000) rmSync(lock, { recursive: true, force: true });
    else if (Date.now() > deadline) throw new Error(`Chromium extraction: ${lock} is held for too long`);
    else await sleep(100);
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Launches headless Chromium; launch() gives it a temporary profile that close() removes. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = await chromiumExecutable();
  return chromium.launch({ executablePath, args: [...CHROMIUM_ARGS], headless: true, timeout: 30_000 });
}
