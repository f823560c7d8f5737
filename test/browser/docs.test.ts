/**
 * The API reference page in real headless Chromium (test/support/chromium.ts):
 * `/docs` renders the public document with its operations, switches to the
 * admin document, and requests nothing but its own origin. A screenshot is
 * saved to test-artifacts/docs.png.
 *
 * Without Chromium this test FAILS (it never skips).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, build } from "../../src/server.js";
import { type Json, loadDocument, root } from "../openapi/support.js";
import { testConfig } from "../support/app.js";
import { launchChromium } from "../support/chromium.js";
import { pglite, useTestDatabase } from "../support/db.js";

describe("API reference page in headless Chromium", () => {
  const database = useTestDatabase(pglite);
  let app: App | undefined;
  let base = "";
  let browser: Browser | undefined;
  let page: Page | undefined;
  let setupError: unknown;
  const requested: string[] = [];
  const consoleLines: string[] = [];

  beforeAll(async () => {
    try {
      browser = await launchChromium();
      app = await build({ config: testConfig(), db: database.db });
      const address = await app.listen(0, "127.0.0.1");
      base = `http://127.0.0.1:${address.port}`;
      page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
      page.on("request", (req) => requested.push(req.url()));
      page.on("console", (msg) => consoleLines.push(`${msg.type()}: ${msg.text()}`));
      page.on("pageerror", (err) => consoleLines.push(`pageerror: ${err.message}`));
      await page.goto(`${base}/docs`, { waitUntil: "load", timeout: 20_000 });
      await page.waitForSelector(".opblock", { timeout: 20_000 });
    } catch (err) {
      setupError = err;
    }
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  function ready(): Page {
    if (setupError !== undefined) throw setupError;
    if (page === undefined) throw new Error("setup did not run");
    return page;
  }

  it("lists every operation of the public document, with its method and path", async () => {
    const p = ready();
    await expect.poll(() => p.locator(".opblock").count(), { timeout: 10_000 }).toBeGreaterThan(20);
    const doc = loadDocument("public");
    expect(await p.locator(".info .title").textContent()).toContain(doc.info.title);
    const shown = await p.locator(".opblock-summary").allInnerTexts();
    const text = shown.join("\n");
    let operations = 0;
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const [method, op] of Object.entries(item as Record<string, Json>)) {
        operations++;
        const line = shown.find((s) => s.includes(path) && s.toUpperCase().includes(method.toUpperCase()));
        expect(line, `${method.toUpperCase()} ${path} (${op.summary}) in:\n${text}`).toBeDefined();
      }
    }
    expect(await p.locator(".opblock").count()).toBe(operations);
    expect(text).toContain("/v1beta1/projects/{project}/calls");
    expect(text).toContain("CreateCall");
    // Tags: one section per service.
    expect(await p.locator(".opblock-tag").allInnerTexts()).toEqual(
      expect.arrayContaining([expect.stringContaining("Calls"), expect.stringContaining("Unsubscribers")]),
    );

    mkdirSync(join(root, "test-artifacts"), { recursive: true });
    await p.screenshot({ path: join(root, "test-artifacts/docs.png"), fullPage: false });
  });

  it("expands an operation with its parameters, request body and error response", async () => {
    const p = ready();
    const block = p.locator(".opblock", { hasText: "CreateCall" });
    await block.locator(".opblock-summary").click();
    const body = block.locator(".opblock-body");
    await body.waitFor({ timeout: 10_000 });
    await expect
      .poll(async () => (await body.textContent()) ?? "", { timeout: 10_000 })
      .toContain("Request body");
    const text = (await body.textContent()) ?? "";
    expect(text).toContain("project");
    expect(text).toContain("default"); // the error response
    // The example request body is built from the schema: camelCase proto3 JSON.
    expect(text).toContain('"handlerUris"');
    await block.locator(".opblock-summary").click();
  });

  it("switches to the admin document", async () => {
    const p = ready();
    const select = p.locator("select#select");
    await select.selectOption({ label: "Switchboard admin API" });
    await p.locator(".opblock-summary-path", { hasText: "/admin/v1/" }).first().waitFor({ timeout: 10_000 });
    expect(await p.locator(".info .title").textContent()).toContain("Switchboard admin API");
    const paths = await p.locator(".opblock-summary-path").allInnerTexts();
    expect(paths.some((s) => s.includes("/admin/v1/projects"))).toBe(true);
  });

  it("requested nothing off-host and broke no rule of its CSP", () => {
    ready();
    expect(requested.length).toBeGreaterThan(3);
    const offHost = requested.filter((u) => !u.startsWith(`${base}/`) && !u.startsWith("data:"));
    expect(offHost).toEqual([]);
    expect(requested).toContain(`${base}/openapi.json`);
    expect(consoleLines.filter((l) => /Content Security Policy|pageerror|Refused/i.test(l))).toEqual([]);
  });
});
