/**
 * Transport tests run against a real listening server: build() the app with
 * a test configuration (the test operator token) and a test database, and
 * listen on 127.0.0.1, port 0. Clients call as the operator unless a test
 * is about calling without a credential.
 */
import { execFile } from "node:child_process";
import * as http from "node:http";
import * as net from "node:net";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Db } from "../../src/db/client.js";
import { type App, type BuildOptions, build } from "../../src/server.js";
import { bearer, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { pglite, useTestDatabase } from "../support/db.js";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const protoDir = resolve(repoRoot, "proto");
export const bufBin = resolve(repoRoot, "node_modules/.bin/buf");

export interface Running {
  app: App;
  port: number;
  /** `http://127.0.0.1:PORT` */
  baseUrl: string;
  close(): Promise<void>;
}

/** `Authorization` of a request made as the operator. */
export const OPERATOR_AUTHORIZATION = `Bearer ${TEST_OPERATOR_TOKEN}`;

/** Connect transport interceptors that call as the operator. */
export const asOperator = [bearer(TEST_OPERATOR_TOKEN)];

/**
 * The database of a test file (call at its top level): PGlite, as these
 * tests are about transports, not storage. Apps started on it share it.
 */
export function useAppDatabase(): { readonly db: Db } {
  return useTestDatabase(pglite);
}

/**
 * Builds the app on `db` with `env` on top of a quiet test configuration
 * and starts it on a free port. close() leaves `db` open.
 */
export async function startApp(
  db: Db,
  env: Record<string, string> = {},
  options: Omit<BuildOptions, "config" | "db"> = {},
): Promise<Running> {
  const config = testConfig({ PORT: "0", ...env });
  const app = await build({ ...options, config, db });
  const address = await app.listen(0, "127.0.0.1");
  const scheme = config.tls ? "https" : "http";
  return {
    app,
    port: address.port,
    baseUrl: `${scheme}://127.0.0.1:${address.port}`,
    close: () => app.close(),
  };
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** An HTTP/1.1 request with full control of the headers (fetch forbids some, such as Origin). */
export function request(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {},
): Promise<RawResponse> {
  return new Promise((resolvePromise, reject) => {
    const req = http.request(
      url,
      { method: init.method ?? "GET", headers: init.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolvePromise({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(init.body);
  });
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `buf` from node_modules/.bin; resolves with its exit code and output, whatever the code. */
export function runBuf(args: string[], timeoutMs = 30_000): Promise<ExecResult> {
  return new Promise((resolvePromise, reject) => {
    execFile(bufBin, args, { timeout: timeoutMs, cwd: repoRoot }, (err, stdout, stderr) => {
      if (err && typeof err.code !== "number") {
        reject(err);
        return;
      }
      resolvePromise({ code: err ? (err.code as number) : 0, stdout, stderr });
    });
  });
}

/** Opens a TCP connection, writes `chunks` with a pause between them, and collects what comes back until close. */
export function rawExchange(
  port: number,
  chunks: Array<string | Buffer>,
  options: { pauseMs?: number; endAfterMs?: number } = {},
): Promise<string> {
  const pauseMs = options.pauseMs ?? 20;
  const endAfterMs = options.endAfterMs ?? 300;
  return new Promise((resolvePromise) => {
    const socket = net.connect(port, "127.0.0.1");
    const received: Buffer[] = [];
    socket.on("data", (d: Buffer) => received.push(d));
    socket.on("error", () => {});
    socket.on("close", () => resolvePromise(Buffer.concat(received).toString("latin1")));
    socket.once("connect", async () => {
      for (const chunk of chunks) {
        if (socket.destroyed) break;
        socket.write(chunk);
        await sleep(pauseMs);
      }
      setTimeout(() => socket.end(), endAfterMs);
      setTimeout(() => socket.destroy(), endAfterMs + 2_000);
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
