/**
 * The opt-out page of APPEND_URL messages, on the service's one port and
 * without credentials (the unguessable token in the path is the
 * authorization):
 *
 *   GET|HEAD /u/{token}  a small page naming the sender, with a button
 *                        (a form POSTing to the same path); changes nothing
 *   POST     /u/{token}  opts the recipient out (opt-out.ts: unsubscriber,
 *                        method URL; idempotent) and confirms it
 *
 * An unknown token is 404 (the same page whether or not it ever existed);
 * other methods 405 with `Allow`. A POST whose `Origin` names another site
 * is 403, so other sites cannot opt recipients out with a hidden form (no
 * CSRF); the page may not be framed, loads nothing and is never cached.
 */
import type { Fallback } from "../../transport/fallback.js";
import type { NodeServerRequest, NodeServerResponse } from "../../transport/types.js";
import type { OptOuts } from "./opt-out.js";
import { OPT_OUT_PATH } from "./opt-out-links.js";

const HEADERS = {
  "Content-Type": "text/html; charset=utf-8",
  "Cache-Control": "no-store",
  "Content-Security-Policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
};

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** `+61491570156` as `+61 •••••• 156`: enough for its owner to recognise it. */
export function maskNumber(phone: string): string {
  return `${phone.slice(0, 3)} ${"•".repeat(Math.max(0, phone.length - 6))} ${phone.slice(-3)}`;
}

function page(title: string, content: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;line-height:1.5}
button{font-size:1rem;padding:.6rem 1.2rem}</style></head>
<body><h1>${escapeHtml(title)}</h1>${content}</body></html>
`;
}

function send(req: NodeServerRequest, res: NodeServerResponse, status: number, html: string): void {
  const body = Buffer.from(html, "utf8");
  res.writeHead(status, { ...HEADERS, "Content-Length": body.length });
  if (req.method === "HEAD") res.end();
  else res.end(body);
}

/** Whether a POST comes from this site (or says nothing about where it comes from). */
function sameOrigin(req: NodeServerRequest): boolean {
  const origin = req.headers.origin;
  if (origin === undefined || origin === "") return true;
  if (origin === "null") return false;
  const host = req.headers.host ?? req.headers[":authority"];
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}

const NOT_FOUND = page("Link not valid", "<p>This opt-out link is not valid.</p>");

export function optOutRoute(optOuts: OptOuts): Fallback {
  return async (req, res) => {
    const m = OPT_OUT_PATH.exec((req.url ?? "/").split("?", 1)[0]!);
    if (m === null) return false;
    const token = m[1]!;
    if (req.method === "GET" || req.method === "HEAD") {
      const target = await optOuts.lookup(token);
      if (target === undefined) {
        send(req, res, 404, NOT_FOUND);
        return true;
      }
      send(
        req,
        res,
        200,
        page(
          "Stop messages?",
          `<p>Stop marketing messages from <strong>${escapeHtml(target.from)}</strong> to ${escapeHtml(maskNumber(target.to))}?</p>
<form method="post"><button type="submit">Unsubscribe</button></form>`,
        ),
      );
      return true;
    }
    if (req.method === "POST") {
      req.resume(); // the form has no fields: drain whatever came
      if (!sameOrigin(req)) {
        send(req, res, 403, page("Not allowed", "<p>Open the link itself to unsubscribe.</p>"));
        return true;
      }
      const done = await optOuts.confirm(token);
      if (done === undefined) {
        send(req, res, 404, NOT_FOUND);
        return true;
      }
      send(
        req,
        res,
        200,
        page(
          "Unsubscribed",
          `<p>${escapeHtml(maskNumber(done.to))} will no longer receive marketing messages from <strong>${escapeHtml(done.from)}</strong>.</p>`,
        ),
      );
      return true;
    }
    res.writeHead(405, { Allow: "GET, HEAD, POST", "Content-Length": 0 });
    res.end();
    return true;
  };
}
