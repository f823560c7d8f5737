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
 */
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
  const { default: sparticuz } = await import("@sparticuz/chromium");
  return sparticuz.executablePath();
}

/** Launches headless Chromium; launch() gives it a temporary profile that close() removes. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = await chromiumExecutable();
  return chromium.launch({ executablePath, args: [...CHROMIUM_ARGS], headless: true, timeout: 30_000 });
}
