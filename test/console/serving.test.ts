/**
 * How the server serves the console (src/transport/console.ts), over real
 * HTTP: `GET /` takes a browser to `/console/` and leaves everything else
 * to the JSON 404; index.html is never cached, hashed assets are cached for
 * good; every console response carries the strict Content-Security-Policy;
 * nothing but the built files is reachable. And the build's budget: the
 * initial JavaScript is at most 200 KB gzipped.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUDGET_BYTES, buildConsole } from "../../scripts/build-console.mjs";
import { type App, build } from "../../src/server.js";
import { CONSOLE_CSP } from "../../src/transport/console.js";
import { testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

describe.each(testDatabases().slice(0, 1))("serving the console ($name)", (backend) => {
  const database = useTestDatabase(backend);
  let app: App | undefined;
  let unbuilt: App | undefined;
  let base = "";
  let unbuiltBase = "";
  let dir = "";
  let initialGzipBytes = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "switchboard-console-"));
    ({ initialGzipBytes } = await buildConsole({ outdir: dir, quiet: true }));
    app = await build({ db: database.db, config: testConfig(), consoleDir: dir });
    base = `http://127.0.0.1:${(await app.listen(0, "127.0.0.1")).port}`;
    unbuilt = await build({ db: database.db, config: testConfig(), consoleDir: join(dir, "missing") });
    unbuiltBase = `http://127.0.0.1:${(await unbuilt.listen(0, "127.0.0.1")).port}`;
  });
  afterAll(async () => {
    await app?.close();
    await unbuilt?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { headers, redirect: "manual" });
  const assets = () => readdirSync(join(dir, "assets"));

  it("redirects a browser's GET / to /console/", async () => {
    const res = await get("/", { Accept: "text/html,application/xhtml+xml,*/*;q=0.8" });
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get("location")!, `${base}/`).pathname).toBe("/console/");
  });

  it("answers any other GET / with the API's JSON 404, as before", async () => {
    for (const accept of [undefined, "application/json", "*/*"]) {
      const res = await get("/", accept === undefined ? {} : { Accept: accept });
      expect(res.status, String(accept)).toBe(404);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(((await res.json()) as { error: { status: string } }).error.status).toBe("NOT_FOUND");
    }
  });

  it("redirects /console to /console/", async () => {
    const res = await get("/console");
    expect(res.status).toBe(301);
    expect(new URL(res.headers.get("location")!, `${base}/console`).pathname).toBe("/console/");
  });

  it("serves index.html uncached, with the CSP, naming only hashed same-origin assets", async () => {
    const res = await get("/console/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
    expect(res.headers.get("set-cookie")).toBeNull();
    const html = await res.text();
    expect(html).toBe(readFileSync(join(dir, "index.html"), "utf8"));
    // No inline script, nothing off-host.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(html).not.toMatch(/https?:\/\//);
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBe(2);
    for (const ref of refs) expect(ref).toMatch(/^assets\/[A-Za-z0-9_-]+-[A-Z0-9]{8}\.(js|css)$/);
  });

  it("keeps the CSP strict: this origin only, no inline or eval'd script", () => {
    expect(CONSOLE_CSP).toContain("default-src 'none'");
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).toContain("connect-src 'self'");
    expect(CONSOLE_CSP).not.toMatch(/unsafe-inline|unsafe-eval|\*|https?:/);
  });

  it("serves hashed assets cached for a year, immutable, with their type and an ETag", async () => {
    const js = assets().find((f) => f.endsWith(".js"))!;
    const css = assets().find((f) => f.endsWith(".css"))!;
    for (const [file, type] of [
      [js, "text/javascript; charset=utf-8"],
      [css, "text/css; charset=utf-8"],
    ] as const) {
      const res = await get(`/console/assets/${file}`);
      expect(res.status, file).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(res.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
      expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(dir, "assets", file)))).toBe(true);
      const etag = res.headers.get("etag")!;
      const again = await get(`/console/assets/${file}`, { "If-None-Match": etag });
      expect(again.status).toBe(304);
    }
  });

  it("answers 404 for anything but the built files", async () => {
    for (const path of [
      "/console/assets/nope-ABCDEFGH.js",
      "/console/assets/%2e%2e%2findex.html",
      "/console/assets/..%2F..%2Fpackage.json",
      "/console/package.json",
      "/console/assets/",
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      await res.arrayBuffer();
    }
  });

  it("refuses other methods with 405", async () => {
    const res = await fetch(`${base}/console/`, { method: "POST", body: "x" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
  });

  it("says how to build the console when it is not built", async () => {
    const res = await fetch(`${unbuiltBase}/console/`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/npm run build/);
  });

  it("keeps the initial JavaScript within 200 KB gzipped", () => {
    expect(BUDGET_BYTES).toBe(200 * 1024);
    expect(initialGzipBytes).toBeGreaterThan(10 * 1024);
    expect(initialGzipBytes).toBeLessThanOrEqual(BUDGET_BYTES);
  });
});
