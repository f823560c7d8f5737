/**
 * The console (the browser app of src/console/, built by
 * scripts/build-console.mjs) as a link of the fallback chain, without
 * credentials (the app signs in with a bearer token of its own):
 *
 * - `GET /` from a browser (`Accept: text/html`) redirects to `/console/`;
 *   any other `GET /` passes, to the API's JSON 404 as before;
 * - `GET /console` redirects to `/console/`, which is `index.html`
 *   (`Cache-Control: no-cache`);
 * - `GET /console/assets/{name}-{hash}.{js,css}`: the hashed files,
 *   cached for a year (`immutable`).
 *
 * Every console response carries a strict Content-Security-Policy: scripts,
 * styles, media and API calls from this origin only, no inline script.
 * Files are read on first use and kept in memory with a strong ETag.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Fallback } from "./fallback.js";
import type { NodeServerRequest, NodeServerResponse } from "./types.js";

export const CONSOLE_PATH = "/console/";

/** Content-Security-Policy of every console response. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * Where the built console is: beside the bundle when running the build
 * (dist/console/, made by scripts/build.mjs), else dist/console/ of the
 * sources' checkout (tsx after a build).
 */
function defaultConsoleDir(): string {
  const candidates = [
    new URL("./console/", import.meta.url),
    new URL("../../dist/console/", import.meta.url),
  ];
  const dirs = candidates.map((u) => fileURLToPath(u));
  return dirs.find((dir) => existsSync(join(dir, "index.html"))) ?? dirs[0]!;
}

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".woff2": "font/woff2",
};

/** A built file's name: letters, digits, `-` and `_`, then `-{hash}.{ext}`; nothing else is looked up. */
const ASSET_NAME = /^[A-Za-z0-9_-]+-[A-Za-z0-9]{8,}\.(js|css|svg|woff2)$/;

interface Asset {
  body: Buffer;
  etag: string;
  headers: Record<string, string>;
}

export interface ConsoleHttpOptions {
  /** The built console (index.html and assets/). Default: dist/console/. */
  dir?: string;
}

const SECURITY_HEADERS = {
  "Content-Security-Policy": CONSOLE_CSP,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

function asset(body: Buffer, contentType: string, cacheControl: string): Asset {
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  return {
    body,
    etag,
    headers: {
      "Content-Type": contentType,
      "Content-Length": String(body.length),
      "Cache-Control": cacheControl,
      ETag: etag,
      ...SECURITY_HEADERS,
    },
  };
}

/** Whether the client asks for a page (a browser's navigation), not JSON. */
function wantsHtml(req: NodeServerRequest): boolean {
  const accept = req.headers.accept;
  return typeof accept === "string" && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept);
}

/** `GET /` (browsers), `/console`, `/console/` and the console's assets, as a fallback link. */
export function createConsoleHttp(options: ConsoleHttpOptions = {}): Fallback {
  const dir = options.dir ?? defaultConsoleDir();
  const cache = new Map<string, Promise<Asset | undefined>>();
  const load = (path: string): Promise<Asset | undefined> => {
    let p = cache.get(path);
    if (p === undefined) {
      p = (async () => {
        if (path === "index.html") {
          const body = await readFile(join(dir, "index.html")).catch(() => undefined);
          return body && asset(body, "text/html; charset=utf-8", "no-cache");
        }
        const body = await readFile(join(dir, "assets", path)).catch(() => undefined);
        return body && asset(body, TYPES[extname(path)]!, "public, max-age=31536000, immutable");
      })();
      cache.set(path, p);
      // A missing or failed file is looked for again on the next request (a build may come later).
      p.then(
        (a) => a === undefined && cache.delete(path),
        () => cache.delete(path),
      );
    }
    return p;
  };

  return (req, res) => {
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const query = q === -1 ? "" : url.slice(q);
    const get = req.method === "GET" || req.method === "HEAD";
    if (path === "/") {
      if (!get || !wantsHtml(req)) return false;
      redirect(res, 302, `console/${query}`);
      return true;
    }
    if (path === "/console") {
      redirect(res, 301, `console/${query}`);
      return true;
    }
    if (!path.startsWith(CONSOLE_PATH)) return false;
    const rest = path.slice(CONSOLE_PATH.length);
    let file: string | undefined;
    if (rest === "" || rest === "index.html") file = "index.html";
    else if (rest.startsWith("assets/") && ASSET_NAME.test(rest.slice("assets/".length))) {
      file = rest.slice("assets/".length);
    }
    if (!get) {
      res.writeHead(405, { Allow: "GET, HEAD", "Content-Length": "0", ...SECURITY_HEADERS });
      res.end();
      return true;
    }
    if (file === undefined) {
      notFound(res, "no such file in the console");
      return true;
    }
    return load(file).then((a) => {
      if (a === undefined) {
        notFound(
          res,
          file === "index.html"
            ? "the console is not built: run `npm run build` (npm start builds it)"
            : "no such file in the console",
        );
      } else send(req, res, a);
      return true;
    });
  };
}

function redirect(res: NodeServerResponse, status: number, location: string): void {
  res.writeHead(status, { Location: location, "Content-Length": "0", ...SECURITY_HEADERS });
  res.end();
}

function notFound(res: NodeServerResponse, message: string): void {
  const body = Buffer.from(JSON.stringify({ error: { code: 404, message, status: "NOT_FOUND" } }));
  res.writeHead(404, {
    "Content-Type": "application/json",
    "Content-Length": String(body.length),
    "Cache-Control": "no-cache",
    ...SECURITY_HEADERS,
  });
  res.end(body);
}

function send(req: NodeServerRequest, res: NodeServerResponse, a: Asset): void {
  const match = req.headers["if-none-match"];
  if (match?.split(",").some((t) => t.trim() === a.etag)) {
    res.writeHead(304, { ETag: a.etag, "Cache-Control": a.headers["Cache-Control"]!, ...SECURITY_HEADERS });
    res.end();
    return;
  }
  res.writeHead(200, a.headers);
  if (req.method === "HEAD") res.end();
  else res.end(a.body);
}
