/**
 * connect-web in real headless Chromium (the npm build of @sparticuz/chromium,
 * or CHROMIUM_PATH; see test/support/chromium.ts), driven by playwright-core: a page on
 * one origin calls the API on another over Connect (JSON) and gRPC-Web, so
 * every call goes through a CORS preflight, and error details must cross
 * CORS too (the Connect JSON error body; Grpc-Status-Details-Bin exposed).
 *
 * The page (page.ts) is bundled with esbuild and served by a small HTTP
 * server of its own: `http://localhost:<port>` while the API is at
 * `http://127.0.0.1:<port>`, two origins.
 *
 * Without Chromium this test FAILS (it never skips).
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/db/client.js";
import { type App, build } from "../../src/server.js";
import { newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { launchChromium } from "../support/chromium.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import type { PageApi, Protocol, RunInput, RunResult } from "./page.js";

const here = dirname(fileURLToPath(import.meta.url));
/** Not the page's origin: the API app that must refuse it. */
const OTHER_ORIGIN = "https://app.example.com";

const PHONES: Record<Protocol, string> = { connect: "+61412000001", grpcweb: "+61412000002" };

/** The page's code: page.ts and what it imports (connect-web, the generated code), as one ES module. */
async function bundlePage(): Promise<string> {
  const result = await esbuild.build({
    entryPoints: [resolve(here, "page.ts")],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    logLevel: "silent",
  });
  const out = result.outputFiles[0];
  if (out === undefined) throw new Error("esbuild produced no output");
  return out.text;
}

const PAGE_HTML =
  '<!doctype html><html><head><meta charset="utf-8"><title>connect-web</title>' +
  '<script type="module" src="/page.js"></script></head><body></body></html>';

/** Serves the page and its script on 127.0.0.1, port 0. */
async function servePage(script: string): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path === "/") {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
      res.end(PAGE_HTML);
    } else if (path === "/page.js") {
      res.writeHead(200, { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "no-store" });
      res.end(script);
    } else {
      res.writeHead(404, { "Content-Type": "text/plain" });
      res.end("not found");
    }
  });
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => ok());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

/** The API app with `origins` allowed by CORS, on 127.0.0.1, port 0. */
async function startApi(db: Db, origins: string): Promise<{ app: App; baseUrl: string }> {
  const app = await build({ config: testConfig({ CORS_ALLOWED_ORIGINS: origins }), db });
  const address = await app.listen(0, "127.0.0.1");
  return { app, baseUrl: `http://127.0.0.1:${address.port}` };
}

describe.each(testDatabases().slice(0, 1))("connect-web in headless Chromium ($name)", (backend) => {
  const database = useTestDatabase(backend);
  let api: { app: App; baseUrl: string } | undefined;
  let refusing: { app: App; baseUrl: string } | undefined;
  let pageServer: { port: number; close(): Promise<void> } | undefined;
  let browser: Browser | undefined;
  let page: Page | undefined;
  let pageOrigin = "";
  let parent = "";
  /**
   * Why the setup failed. Each test rethrows it, so a missing Chromium shows
   * up as failed tests (a throwing beforeAll would only mark them skipped).
   */
  let setupError: unknown;
  /** What Chromium logged to the page console (CORS refusals show up here). */
  const consoleLines: string[] = [];

  beforeAll(async () => {
    try {
      // Chromium first: without it, fail at once with the reason.
      browser = await launchChromium();
      pageServer = await servePage(await bundlePage());
      pageOrigin = `http://localhost:${pageServer.port}`;
      api = await startApi(database.db, pageOrigin);
      refusing = await startApi(database.db, OTHER_ORIGIN);
      parent = await newProject(database.db);

      page = await browser.newPage();
      page.on("console", (msg) => consoleLines.push(`${msg.type()}: ${msg.text()}`));
      page.on("pageerror", (err) => consoleLines.push(`pageerror: ${err.message}`));
      await page.goto(`${pageOrigin}/`, { waitUntil: "load", timeout: 15_000 });
      await page.waitForFunction(() => "switchboard" in globalThis, undefined, { timeout: 10_000 });
    } catch (err) {
      setupError = err;
    }
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await pageServer?.close();
    await api?.app.close();
    await refusing?.app.close();
  });

  /** The page, the allowing API and the refusing one; throws why the setup failed. */
  function ready(): { page: Page; api: string; refusing: string } {
    if (setupError !== undefined) throw setupError;
    if (page === undefined || api === undefined || refusing === undefined)
      throw new Error("setup did not run");
    return { page, api: api.baseUrl, refusing: refusing.baseUrl };
  }

  function run(input: RunInput): Promise<RunResult> {
    return ready().page.evaluate(
      (i) => (globalThis as unknown as { switchboard: PageApi }).switchboard.run(i),
      input,
    );
  }

  it("serves the page from another origin than the API", () => {
    const { page, api } = ready();
    expect(new URL(pageOrigin).origin).not.toBe(new URL(api).origin);
    expect(page.url()).toBe(`${pageOrigin}/`);
  });

  it.each<Protocol>(["connect", "grpcweb"])("calls the API over %s across origins", async (protocol) => {
    const before = consoleLines.length;
    const result = await run({
      baseUrl: ready().api,
      token: TEST_OPERATOR_TOKEN,
      protocol,
      parent,
      phone: PHONES[protocol],
    });
    if (!result.ok) expect.fail(`${protocol}: ${JSON.stringify(result.error)}; console: ${consoleLines}`);

    expect(result.created.name).toMatch(new RegExp(`^${parent}/unsubscribers/[^/]+$`));
    expect(result.created.phone).toBe(PHONES[protocol]);
    expect(result.created.labels).toEqual({ via: protocol });
    expect(result.listed).toContain(result.created.name);
    expect(result.got).toEqual(result.created);

    // The error, its code and its details all crossed CORS.
    expect(result.invalid, "the create with phone 'x' should have failed").toBeDefined();
    expect(result.invalid!.code, result.invalid!.message).toBe("InvalidArgument");
    expect(result.invalid!.reason).toBe("INVALID_ARGUMENT");
    expect(result.invalid!.fields).toEqual(["unsubscriber.phone"]);

    expect(consoleLines.slice(before).filter((l) => /CORS|blocked/i.test(l))).toEqual([]);
  });

  it.each<Protocol>(["connect", "grpcweb"])(
    "is refused by the browser over %s when the page's origin is not allowed",
    async (protocol) => {
      const before = consoleLines.length;
      const result = await run({
        baseUrl: ready().refusing,
        token: TEST_OPERATOR_TOKEN,
        protocol,
        parent,
        phone: "+61412000003",
      });
      expect(result.ok, JSON.stringify(result)).toBe(false);
      if (result.ok) return;
      // A network error to the page (fetch rejects, connect-web makes it
      // UNKNOWN): no status, no body, no details.
      expect(result.error.code).toBe("Unknown");
      expect(result.error.message).toMatch(/failed to fetch/i);
      expect(result.error.fields).toEqual([]);
      // Chromium says why: the preflight got no Access-Control-Allow-Origin.
      expect(consoleLines.slice(before).join("\n")).toMatch(/blocked by CORS policy: Response to preflight/);
    },
  );
});
