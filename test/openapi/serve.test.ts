/**
 * The documents and the reference page against a real listening server:
 * served without credentials, as committed, with ETags and CORS like the
 * rest of the port; and every documented operation routes to its method
 * (without credentials it answers 401 UNAUTHENTICATED, not the 404 of a
 * path nothing serves).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, build } from "../../src/server.js";
import { DOCS_CSP } from "../../src/transport/openapi.js";
import { testConfig } from "../support/app.js";
import { pglite, useTestDatabase } from "../support/db.js";
import {
  documentOf,
  httpBindings,
  type Json,
  loadDocument,
  openapiShape,
  root,
  templateShape,
} from "./support.js";

const ORIGIN = "https://app.example.com";

describe("OpenAPI over HTTP", () => {
  const database = useTestDatabase(pglite);
  let app: App | undefined;
  let base = "";

  beforeAll(async () => {
    app = await build({ config: testConfig({ CORS_ALLOWED_ORIGINS: ORIGIN }), db: database.db });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await app?.close();
  });

  it.each([
    ["/openapi.json", "public"],
    ["/admin/openapi.json", "admin"],
  ] as const)("serves %s without credentials, as committed", async (path, which) => {
    const res = await fetch(`${base}${path}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const text = await res.text();
    expect(text).toBe(readFileSync(join(root, `gen/openapi/${which}.openapi.json`), "utf8"));
    const doc = JSON.parse(text) as Json;
    expect(doc.servers).toEqual([{ url: "/", description: "This server" }]);

    // Conditional requests: the ETag is strong and stable.
    const etag = res.headers.get("etag");
    expect(etag).toMatch(/^"[^"]+"$/);
    const again = await fetch(`${base}${path}`, { headers: { "If-None-Match": etag! } });
    expect(again.status).toBe(304);
    await again.arrayBuffer();

    const head = await fetch(`${base}${path}`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(Buffer.byteLength(text)));
  });

  it("answers CORS like every other path of the port", async () => {
    const allowed = await fetch(`${base}/openapi.json`, { headers: { Origin: ORIGIN } });
    expect(allowed.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    await allowed.arrayBuffer();
    const other = await fetch(`${base}/openapi.json`, { headers: { Origin: "https://evil.example" } });
    expect(other.status).toBe(200);
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    await other.arrayBuffer();
  });

  it("refuses other methods with 405 and Allow", async () => {
    const res = await fetch(`${base}/openapi.json`, { method: "POST", body: "{}" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
  });

  it("serves /docs and its assets from node_modules, under a same-origin-only CSP", async () => {
    const page = await fetch(`${base}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toBe(DOCS_CSP);
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toContain("docs/swagger-ui-bundle.js");
    for (const asset of assets) {
      expect(asset, "relative, same-origin URLs only").not.toMatch(/^(https?:)?\/\//);
      const res = await fetch(new URL(asset, `${base}/docs`));
      expect(res.status, asset).toBe(200);
      expect((await res.arrayBuffer()).byteLength, asset).toBeGreaterThan(0);
    }
    const slash = await fetch(`${base}/docs/`, { redirect: "manual" });
    expect(slash.status).toBe(301);
    expect(new URL(slash.headers.get("location")!, `${base}/docs/`).pathname).toBe("/docs");
  });

  it("documents every google.api.http binding of every service the app serves", () => {
    const bindings = httpBindings(app!.services.map((s) => s.desc));
    expect(bindings.length).toBeGreaterThan(40);
    const missing = bindings.filter((b) => {
      const doc = loadDocument(documentOf(b.service));
      return !Object.entries(doc.paths as Record<string, Json>).some(
        ([path, item]) =>
          openapiShape(path) === templateShape(b.template) &&
          String(item[b.httpMethod]?.operationId ?? "").startsWith(`${b.service.name}_${b.method}`),
      );
    });
    expect(missing.map((b) => `${b.service.typeName}.${b.method} ${b.template}`)).toEqual([]);
  });

  it("routes every documented operation (401 UNAUTHENTICATED without credentials, never 404)", async () => {
    const results: string[] = [];
    let count = 0;
    for (const which of ["public", "admin"] as const) {
      const doc = loadDocument(which);
      for (const [template, item] of Object.entries(doc.paths as Record<string, Json>)) {
        for (const [method, op] of Object.entries(item as Record<string, Json>)) {
          count++;
          const path = template.replace(/\{([^}]+)\}/g, (_m, name: string) => `${name}-1`);
          const hasBody = op.requestBody !== undefined;
          const res = await fetch(`${base}${path}`, {
            method: method.toUpperCase(),
            ...(hasBody ? { body: "{}", headers: { "Content-Type": "application/json" } } : {}),
          });
          const body = (await res.json()) as Json;
          if (res.status !== 401 || body.error?.status !== "UNAUTHENTICATED") {
            results.push(
              `${method.toUpperCase()} ${path} (${op.operationId}): ${res.status} ${JSON.stringify(body)}`,
            );
          }
        }
      }
    }
    expect(count).toBeGreaterThan(40);
    expect(results).toEqual([]);
    // The control: a path no operation documents is the REST 404.
    const none = await fetch(`${base}/v1beta1/projects/p-1/nothing`);
    expect(none.status).toBe(404);
    expect(((await none.json()) as Json).error.details[0].reason).toBe("ROUTE_NOT_FOUND");
  });
});
