/**
 * The console's tests' set-up: the console built with esbuild into a
 * temporary folder (scripts/build-console.mjs, as `npm run build` does), the
 * real app (build()) serving it on 127.0.0.1, headless Chromium
 * (test/support/chromium.ts) on the app's own origin, and helpers: signing
 * in, the axe check (axe-core evaluated in the page), screenshots kept under
 * test-artifacts/console/.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { expect } from "vitest";
import { buildConsole } from "../../scripts/build-console.mjs";
import type { Db } from "../../src/db/client.js";
import { type App, build } from "../../src/server.js";
import { testConfig } from "../support/app.js";
import { ROOT } from "../support/build.js";
import { launchChromium } from "../support/chromium.js";

export const ARTIFACTS = join(ROOT, "test-artifacts", "console");

export interface ConsoleHarness {
  app: App;
  baseUrl: string;
  browser: Browser;
  /**
   * The one browser context, with a blank page kept open: Chromium runs
   * --single-process (test/support/chromium.ts), and closing its last page
   * or context ends it. Tabs are pages of this context (each has its own
   * sessionStorage).
   */
  context: BrowserContext;
  consoleDir: string;
  close(): Promise<void>;
}

/** Builds the console, starts the app on `db` with `env` and launches Chromium. */
export async function startConsole(db: Db, env: NodeJS.ProcessEnv = {}): Promise<ConsoleHarness> {
  const consoleDir = mkdtempSync(join(tmpdir(), "switchboard-console-"));
  const browser = await launchChromium();
  let app: App | undefined;
  try {
    await buildConsole({ outdir: consoleDir, quiet: true });
    app = await build({ db, config: testConfig(env), consoleDir });
    const address = await app.listen(0, "127.0.0.1");
    mkdirSync(ARTIFACTS, { recursive: true });
    const started = app;
    const context = await browser.newContext();
    await context.newPage();
    return {
      app: started,
      baseUrl: `http://127.0.0.1:${address.port}`,
      browser,
      context,
      consoleDir,
      async close() {
        await browser.close();
        await started.close();
        rmSync(consoleDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await browser.close();
    await app?.close();
    rmSync(consoleDir, { recursive: true, force: true });
    throw err;
  }
}

/** A fresh tab (its own sessionStorage), recording what the page logged; close() closes it. */
export async function newTab(
  h: ConsoleHarness,
  options: { width?: number; dark?: boolean } = {},
): Promise<{ page: Page; logs: string[]; close(): Promise<void> }> {
  const page = await h.context.newPage();
  await page.setViewportSize({ width: options.width ?? 1100, height: 900 });
  await page.emulateMedia({ colorScheme: options.dark === true ? "dark" : "light" });
  const logs: string[] = [];
  page.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  return { page, logs, close: () => page.close() };
}

/** Opens the console and signs in with `token` (and `projectId` for a project credential). */
export async function signIn(page: Page, baseUrl: string, token: string, projectId = ""): Promise<void> {
  await page.goto(`${baseUrl}/console/`);
  await page.getByLabel("Token").fill(token);
  if (projectId !== "") await page.getByLabel("Project ID").fill(projectId);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect
    .poll(() => page.getByRole("button", { name: "Sign out" }).count(), { timeout: 10_000 })
    .toBe(1);
}

/** Goes to a console route (`#/calls`) and waits for its heading. */
export async function openPage(page: Page, route: string, heading: string | RegExp): Promise<void> {
  await page.evaluate((r) => {
    (globalThis as unknown as { location: { hash: string } }).location.hash = r;
  }, route);
  await page.getByRole("heading", { level: 1, name: heading }).waitFor({ timeout: 10_000 });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/**
 * axe-core in the page (evaluated through the DevTools protocol, which the
 * page's Content-Security-Policy does not govern): the serious and critical
 * violations, as `id: help (targets)` lines.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  const loaded = await page.evaluate(() => "axe" in globalThis);
  if (!loaded) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run();
    return result.violations;
  });
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => JSON.stringify(n.target)).join(", ")})`);
}

/** Saves a full-page screenshot as a test artifact. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** The page's own errors and CSP refusals among `logs` (none expected). */
export function pageProblems(logs: string[]): string[] {
  return logs.filter((l) => /pageerror|Content Security Policy|Refused to/i.test(l));
}
