/**
 * One outbound HTTP request of a webhook (POST) or of call media (GET, the
 * audio of a `<Play>`): a time limit covering
 * the whole exchange (redirects and response body included), redirects
 * followed as fetch does (at most 5; 307/308 repeat the POST, 301/302/303
 * continue with GET), the destination guard (destinations.ts) on every hop,
 * and keep-alive connections (agents.ts: guarded and unguarded requests
 * never share a pool). A request that fails on a reused socket before any
 * response (the server closed it while idle) is sent once more on a new one.
 */
import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { agentFor } from "./agents.js";
import { checkLiteralHost, DestinationRefusedError, guardedLookup } from "./destinations.js";

export interface HttpPostOptions {
  /** Time limit of the whole request, milliseconds. */
  timeoutMs: number;
  /** Skip the destination guard (WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS). */
  allowPrivateDestinations: boolean;
  /** Response bodies are cut at this many bytes. Default 1 MiB. */
  maxResponseBytes?: number;
}

export interface HttpResponse {
  status: number;
  headers: IncomingMessage["headers"];
  /** The response body (cut at `maxResponseBytes`). */
  body: Buffer;
  /** Whether the body was longer than `maxResponseBytes` (and cut). */
  truncated: boolean;
  /** The URL that answered (after redirects). */
  url: string;
}

/** A request that got no HTTP response; `message` says why. */
export class HttpRequestError extends Error {
  override name = "HttpRequestError";
}

const MAX_REDIRECTS = 5;
const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * POSTs `body` to `url` with `headers`. Resolves with the final response
 * whatever its status; rejects with HttpRequestError when there was none
 * (timeout, refused destination, connection error, bad URL, too many
 * redirects).
 */
export function httpPost(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: HttpPostOptions,
): Promise<HttpResponse> {
  return send("POST", url, headers, body, options);
}

/** GETs `url`, like httpPost (same limits, redirects and guard). */
export function httpGet(
  url: string,
  headers: Record<string, string>,
  options: HttpPostOptions,
): Promise<HttpResponse> {
  return send("GET", url, headers, undefined, options);
}

async function send(
  firstMethod: "GET" | "POST",
  url: string,
  headers: Record<string, string>,
  body: string | undefined,
  options: HttpPostOptions,
): Promise<HttpResponse> {
  const deadline = new Deadline(options.timeoutMs);
  try {
    let current = parseUrl(url);
    let method: string = firstMethod;
    let payload: string | undefined = body;
    for (let hop = 0; ; hop++) {
      const res = await once(current, method, headers, payload, options, deadline);
      const location = res.headers.location;
      if (res.status >= 300 && res.status < 400 && res.status !== 304 && location !== undefined) {
        if (hop >= MAX_REDIRECTS) throw new HttpRequestError(`more than ${MAX_REDIRECTS} redirects`);
        current = parseUrl(new URL(location, current).toString());
        if (res.status !== 307 && res.status !== 308) {
          method = "GET";
          payload = undefined;
        }
        continue;
      }
      return res;
    }
  } catch (err) {
    if (deadline.expired) throw new HttpRequestError(`timed out after ${options.timeoutMs} ms`);
    if (err instanceof HttpRequestError) throw err;
    if (err instanceof DestinationRefusedError) throw new HttpRequestError(err.message);
    const code = (err as { code?: unknown }).code;
    const message = err instanceof Error ? err.message : String(err);
    throw new HttpRequestError(
      typeof code === "string" && !message.includes(code) ? `${code}: ${message}` : message,
    );
  } finally {
    deadline.clear();
  }
}

/**
 * The time limit of one send, every hop and body included: when it passes,
 * the request in flight is destroyed (its socket closed, never pooled again).
 * A timer and a reference rather than an
 * `AbortSignal` on each request: Node's `http.request({ signal })` ties the
 * signal to the request with listeners and an end-of-stream watcher, which
 * cost about a third of a webhook request's client CPU (docs/performance.md,
 * twenty-second session).
 */
class Deadline {
  expired = false;
  private request: ClientRequest | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(ms: number) {
    this.timer = setTimeout(() => {
      this.expired = true;
      this.request?.destroy(new HttpRequestError(`timed out after ${ms} ms`));
    }, ms);
  }

  /**
   * `req` is the request in flight. A hop (or the retry on a new socket)
   * starts in the same turn of the event loop as the one before it ended,
   * so the timer never fires between two requests.
   */
  track(req: ClientRequest): void {
    this.request = req;
  }

  clear(): void {
    clearTimeout(this.timer);
    this.request = undefined;
  }
}

function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new HttpRequestError(`not a valid URL: ${raw}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new HttpRequestError(`unsupported URL scheme ${url.protocol}`);
  }
  return url;
}

/** Errors of a pooled socket the server closed while it was idle. */
const STALE_SOCKET = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED"]);

async function once(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  options: HttpPostOptions,
  deadline: Deadline,
): Promise<HttpResponse> {
  try {
    return await exchange(url, method, headers, body, options, deadline, false);
  } catch (err) {
    if (!(err instanceof StaleSocketError) || deadline.expired)
      throw err instanceof StaleSocketError ? err.cause : err;
    return exchange(url, method, headers, body, options, deadline, true);
  }
}

/** A request that failed on a reused keep-alive socket before any response. */
class StaleSocketError extends Error {}

function exchange(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  options: HttpPostOptions,
  deadline: Deadline,
  fresh: boolean,
): Promise<HttpResponse> {
  if (!options.allowPrivateDestinations) checkLiteralHost(url);
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  const outgoing: Record<string, string> = { ...headers };
  if (body === undefined) delete outgoing["content-type"];
  else outgoing["content-length"] = String(Buffer.byteLength(body, "utf8"));
  let responded = false;
  return new Promise<HttpResponse>((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        headers: outgoing,
        // A retry after a stale pooled socket gets a connection of its own.
        agent: fresh ? false : agentFor(url.protocol, options.allowPrivateDestinations),
        ...(options.allowPrivateDestinations ? {} : { lookup: guardedLookup }),
      },
      (res) => {
        responded = true;
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        res.on("data", (chunk: Buffer) => {
          if (chunk.length > maxBytes - size) truncated = true;
          if (size >= maxBytes) return;
          const kept = chunk.subarray(0, maxBytes - size);
          chunks.push(kept);
          size += kept.length;
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            truncated,
            url: url.toString(),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", (err) => {
      const code = (err as { code?: unknown }).code;
      if (req.reusedSocket && !responded && typeof code === "string" && STALE_SOCKET.has(code)) {
        reject(new StaleSocketError(err.message, { cause: err }));
      } else reject(err);
    });
    deadline.track(req);
    req.end(body);
  });
}
