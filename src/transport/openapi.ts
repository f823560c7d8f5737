/**
 * The API description, as a link of the fallback chain, without credentials:
 *
 * - `GET /openapi.json`: the public REST API (OpenAPI 3.1), and
 *   `GET /admin/openapi.json`: the operator's admin API — both the files
 *   `buf generate` wrote to `gen/openapi/` (scripts/protoc-gen-openapi),
 *   served as committed, with `servers: [{"url": "/"}]` so they work for
 *   whichever host the caller reached;
 * - `GET /docs`: an API reference page rendering both (Swagger UI from
 *   the `swagger-ui-dist` package in node_modules, its assets under
 *   `/docs/...`). Its Content-Security-Policy allows this origin only, so
 *   the page fetches nothing off-host (deployments may have no internet).
 *
 * Files are read on first use and kept in memory with a strong ETag.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Fallback } from "./fallback.js";
import type { NodeServerRequest, NodeServerResponse } from "./types.js";

/**
 * Where the documents are: beside the bundle when running the build
 * (dist/openapi/, copied there by scripts/build.mjs), else in gen/openapi/
 * of the sources (tsx, tests).
 */
const GEN_OPENAPI =
  [new URL("./openapi/", import.meta.url), new URL("../../gen/openapi/", import.meta.url)]
    .map((u) => fileURLToPath(u))
    .find((dir) => existsSync(join(dir, "public.openapi.json"))) ??
  fileURLToPath(new URL("../../gen/openapi/", import.meta.url));

export const OPENAPI_PATHS = {
  public: "/openapi.json",
  admin: "/admin/openapi.json",
  docs: "/docs",
} as const;

/** Content-Security-Policy of the reference page: nothing from anywhere but this origin. */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

// Relative URLs throughout, so the page also works behind a path prefix:
// from `/docs`, `docs/x` is `/docs/x` and `openapi.json` is `/openapi.json`.
const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchboard API reference</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
<link rel="icon" type="image/png" href="docs/favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="docs/favicon-16x16.png" sizes="16x16">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/swagger-ui-standalone-preset.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

const DOCS_INIT = `"use strict";
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    urls: [
      { url: "openapi.json", name: "Switchboard API" },
      { url: "admin/openapi.json", name: "Switchboard admin API" },
    ],
    "urls.primaryName": "Switchboard API",
    dom_id: "#swagger-ui",
    deepLinking: true,
    // No validator badge: it would send the document to validator.swagger.io.
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
    persistAuthorization: false,
  });
});
`;

/** Swagger UI's files served under /docs/ (name -> content type). */
const SWAGGER_ASSETS: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png",
};

interface Asset {
  body: Buffer;
  etag: string;
  headers: Record<string, string>;
}

export interface OpenApiHttpOptions {
  /** Directory of `public.openapi.json` and `admin.openapi.json`. Default `gen/openapi/`. */
  documentsDir?: string;
}

function swaggerUiDir(): string {
  const require = createRequire(import.meta.url);
  return dirname(require.resolve("swagger-ui-dist/package.json"));
}

function asset(body: Buffer, contentType: string, extra: Record<string, string> = {}): Asset {
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  return {
    body,
    etag,
    headers: {
      "Content-Type": contentType,
      "Content-Length": String(body.length),
      "Cache-Control": "no-cache",
      "X-Content-Type-Options": "nosniff",
      ETag: etag,
      ...extra,
    },
  };
}

/** `GET /openapi.json`, `/admin/openapi.json`, `/docs` and its assets, as a fallback link. */
export function createOpenApiHttp(options: OpenApiHttpOptions = {}): Fallback {
  const documentsDir = options.documentsDir ?? GEN_OPENAPI;
  const docsHeaders = { "Content-Security-Policy": DOCS_CSP, "Referrer-Policy": "no-referrer" };
  const loaders = new Map<string, () => Promise<Asset>>([
    [
      OPENAPI_PATHS.public,
      async () => asset(await readFile(join(documentsDir, "public.openapi.json")), "application/json"),
    ],
    [
      OPENAPI_PATHS.admin,
      async () => asset(await readFile(join(documentsDir, "admin.openapi.json")), "application/json"),
    ],
    [OPENAPI_PATHS.docs, async () => asset(Buffer.from(DOCS_HTML), "text/html; charset=utf-8", docsHeaders)],
    ["/docs/init.js", async () => asset(Buffer.from(DOCS_INIT), "text/javascript; charset=utf-8")],
  ]);
  for (const [name, type] of Object.entries(SWAGGER_ASSETS)) {
    loaders.set(`/docs/${name}`, async () => asset(await readFile(join(swaggerUiDir(), name)), type));
  }
  const cache = new Map<string, Promise<Asset>>();
  const load = (path: string, loader: () => Promise<Asset>): Promise<Asset> => {
    let p = cache.get(path);
    if (p === undefined) {
      p = loader();
      cache.set(path, p);
      // A failed read is retried on the next request.
      p.catch(() => cache.delete(path));
    }
    return p;
  };

  return (req, res) => {
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    if (path === "/docs/") {
      res.writeHead(301, { Location: `../docs${q === -1 ? "" : url.slice(q)}`, "Content-Length": "0" });
      res.end();
      return true;
    }
    const loader = loaders.get(path);
    if (loader === undefined) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD", "Content-Length": "0" });
      res.end();
      return true;
    }
    return load(path, loader).then((a) => {
      send(req, res, a);
      return true;
    });
  };
}

function send(req: NodeServerRequest, res: NodeServerResponse, a: Asset): void {
  const match = req.headers["if-none-match"];
  if (match?.split(",").some((t) => t.trim() === a.etag)) {
    res.writeHead(304, { ETag: a.etag, "Cache-Control": "no-cache" });
    res.end();
    return;
  }
  res.writeHead(200, a.headers);
  if (req.method === "HEAD") res.end();
  else res.end(a.body);
}
