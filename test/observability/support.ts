/**
 * Observability tests: an app on a real port whose log is captured (pino
 * writing JSON lines into memory), and clients of every transport that
 * can send headers and read response headers.
 */
import { Writable } from "node:stream";
import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import pino from "pino";
import type { Db } from "../../src/db/client.js";
import type { BuildOptions } from "../../src/server.js";
import { type Running, startApp } from "../transport/helpers.js";

export type LogLine = Record<string, unknown> & { msg: string; level: number };

export interface CapturedLog {
  lines: LogLine[];
  logger: pino.Logger;
}

/** A pino logger at `level` whose lines land in `lines`. */
export function captureLog(level = "info"): CapturedLog {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line.trim() !== "") lines.push(JSON.parse(line) as LogLine);
      }
      done();
    },
  });
  return { lines, logger: pino({ level }, stream) };
}

export async function startObservedApp(
  db: Db,
  env: Record<string, string> = {},
  options: Omit<BuildOptions, "config" | "db" | "log"> = {},
): Promise<Running & { log: CapturedLog; sessions: Http2SessionManager[] }> {
  const log = captureLog(env.LOG_LEVEL ?? "info");
  const running = await startApp(db, env, { ...options, log: log.logger });
  return { ...running, log, sessions: [] };
}

export type RpcTransportName = "connect" | "grpc" | "grpc-web";

/** A Connect / gRPC / gRPC-Web transport to `baseUrl` sending `headers` on every call. */
export function rpcTransport(
  name: RpcTransportName,
  baseUrl: string,
  headers: Record<string, string>,
  onResponseHeaders?: (h: Headers) => void,
): { transport: Transport; close(): void } {
  const interceptors: Interceptor[] = [
    (next) => async (req) => {
      for (const [k, v] of Object.entries(headers)) req.header.set(k, v);
      const res = await next(req);
      onResponseHeaders?.(res.header);
      return res;
    },
  ];
  if (name === "grpc") {
    const sessions = new Http2SessionManager(baseUrl);
    return {
      transport: createGrpcTransport({ baseUrl, sessionManager: sessions, interceptors }),
      close: () => sessions.abort(),
    };
  }
  if (name === "grpc-web") {
    return { transport: createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors }), close() {} };
  }
  return { transport: createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors }), close() {} };
}

export function rpcClient<S extends DescService>(
  service: S,
  name: RpcTransportName,
  baseUrl: string,
  headers: Record<string, string>,
  onResponseHeaders?: (h: Headers) => void,
): { client: Client<S>; close(): void } {
  const t = rpcTransport(name, baseUrl, headers, onResponseHeaders);
  return { client: createClient(service, t.transport), close: t.close };
}

/** Waits until `predicate` holds (log lines are written when the response closes). */
export async function eventually(predicate: () => boolean, ms = 2000): Promise<void> {
  const until = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}
