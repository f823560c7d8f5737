/**
 * The three ways the benchmark calls RegulatoryListings: gRPC (connect-node
 * createGrpcTransport, one HTTP/2 connection multiplexing the callers),
 * Connect JSON (createConnectTransport over HTTP/1.1 with a keep-alive
 * agent) and REST (fetch with keep-alive, proto3 JSON on the
 * `google.api.http` paths). Every URL is checked to be on 127.0.0.1.
 */
import * as http from "node:http";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { RegulatoryListings } from "../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { LISTING_INIT, LISTING_JSON } from "./fixture.js";

export type TransportName = "grpc" | "connect" | "rest";
export const TRANSPORTS: readonly TransportName[] = ["grpc", "connect", "rest"];

/** Per-request timeout: a stuck server fails the request, it does not hang the run. */
const TIMEOUT_MS = 30_000;

export interface ListPage {
  count: number;
  nextPageToken: string;
}

/** One transport's calls of the service. */
export interface ListingsDriver {
  readonly transport: TransportName;
  /** Creates the fixture listing in `project`; returns its name. */
  create(project: string): Promise<string>;
  get(name: string): Promise<void>;
  list(project: string, pageSize: number, pageToken: string): Promise<ListPage>;
  close(): void;
}

/** Throws unless `url` is plain http on 127.0.0.1: the benchmark calls nothing else. */
export function assertLoopback(url: string): URL {
  const u = new URL(url);
  if (u.protocol !== "http:" || u.hostname !== "127.0.0.1") {
    throw new Error(`refusing to call ${url}: the benchmark only calls http://127.0.0.1`);
  }
  return u;
}

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

function connectDriver(
  transport: TransportName,
  client: Client<typeof RegulatoryListings>,
  close: () => void,
): ListingsDriver {
  return {
    transport,
    async create(project) {
      const listing = await client.createRegulatoryListing({
        parent: `projects/${project}`,
        regulatoryListing: LISTING_INIT,
      });
      return listing.name;
    },
    async get(name) {
      await client.getRegulatoryListing({ name });
    },
    async list(project, pageSize, pageToken) {
      const res = await client.listRegulatoryListings({ parent: `projects/${project}`, pageSize, pageToken });
      return { count: res.regulatoryListings.length, nextPageToken: res.nextPageToken };
    },
    close,
  };
}

export function grpcDriver(baseUrl: string, token: string): ListingsDriver {
  assertLoopback(baseUrl);
  const sessionManager = new Http2SessionManager(baseUrl);
  const client = createClient(
    RegulatoryListings,
    createGrpcTransport({
      baseUrl,
      sessionManager,
      interceptors: [bearer(token)],
      defaultTimeoutMs: TIMEOUT_MS,
    }),
  );
  return connectDriver("grpc", client, () => sessionManager.abort());
}

export function connectJsonDriver(baseUrl: string, token: string, concurrency: number): ListingsDriver {
  assertLoopback(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const client = createClient(
    RegulatoryListings,
    createConnectTransport({
      baseUrl,
      httpVersion: "1.1",
      useBinaryFormat: false,
      nodeOptions: { agent },
      interceptors: [bearer(token)],
      defaultTimeoutMs: TIMEOUT_MS,
    }),
  );
  return connectDriver("connect", client, () => agent.destroy());
}

async function fail(res: Response, what: string): Promise<never> {
  const body = await res.text().catch(() => "");
  throw new Error(`${what}: HTTP ${res.status} ${body.slice(0, 300)}`);
}

/** REST through Node's fetch (undici: keep-alive connections per origin). */
export function restDriver(baseUrl: string, token: string): ListingsDriver {
  const base = assertLoopback(baseUrl).origin;
  const headers = { authorization: `Bearer ${token}` };
  const postHeaders = { ...headers, "content-type": "application/json" };
  return {
    transport: "rest",
    async create(project) {
      const res = await fetch(`${base}/v1beta1/projects/${project}/regulatoryListings`, {
        method: "POST",
        headers: postHeaders,
        body: LISTING_JSON,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      if (!res.ok) return fail(res, "create");
      const listing = (await res.json()) as { name?: unknown };
      if (typeof listing.name !== "string") throw new Error("create: no name in the answer");
      return listing.name;
    },
    async get(name) {
      const res = await fetch(`${base}/v1beta1/${name}`, {
        headers,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      if (!res.ok) return fail(res, "get");
      await res.arrayBuffer();
    },
    async list(project, pageSize, pageToken) {
      const query = new URLSearchParams({ pageSize: String(pageSize) });
      if (pageToken !== "") query.set("pageToken", pageToken);
      const res = await fetch(`${base}/v1beta1/projects/${project}/regulatoryListings?${query}`, {
        headers,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      if (!res.ok) return fail(res, "list");
      const page = (await res.json()) as { regulatoryListings?: unknown[]; nextPageToken?: string };
      return { count: page.regulatoryListings?.length ?? 0, nextPageToken: page.nextPageToken ?? "" };
    },
    close() {},
  };
}

/** Where a target serves each transport (the real server: one port for all). */
export interface Endpoints {
  /** HTTP/2 cleartext, for gRPC. */
  h2: string;
  /** HTTP/1.1, for Connect and REST. */
  h1: string;
}

export function createDriver(
  transport: TransportName,
  endpoints: Endpoints,
  token: string,
  concurrency: number,
): ListingsDriver {
  switch (transport) {
    case "grpc":
      return grpcDriver(endpoints.h2, token);
    case "connect":
      return connectJsonDriver(endpoints.h1, token, concurrency);
    case "rest":
      return restDriver(endpoints.h1, token);
  }
}
