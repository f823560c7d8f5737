/**
 * The framework's ceiling: a bare connect-node server for the same
 * RegulatoryListings service descriptor whose handlers return constant
 * messages — no interceptors, no validation, no database — plus, for REST, a
 * bare node http handler returning constant JSON. Run as a child process of
 * bench/run.ts; prints one JSON line with its ports:
 *
 *   {"ceiling":{"h2":<port>,"h1":<port>}}
 *
 * h2: HTTP/2 cleartext with prior knowledge (gRPC, Connect and REST).
 * h1: HTTP/1.1 (Connect and REST).
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { RegulatoryListings } from "../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { BENCH_PROJECT, sampleListing, sampleListingJson, samplePage, samplePageJson } from "./fixture.js";

const LISTING = sampleListing(BENCH_PROJECT, "c000000000000000", new Date());
const PAGE = samplePage(BENCH_PROJECT);
const LISTING_JSON = Buffer.from(sampleListingJson(BENCH_PROJECT, "c000000000000000"));
const PAGE_JSON = Buffer.from(samplePageJson(BENCH_PROJECT));

const routes = (router: ConnectRouter) => {
  router.service(RegulatoryListings, {
    createRegulatoryListing: () => LISTING,
    getRegulatoryListing: () => LISTING,
    listRegulatoryListings: () => PAGE,
  });
};

const connectHandler = connectNodeAdapter({ routes });

/** REST: the request body is read (as any server must), then a constant JSON answer. */
function rest(
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
): void {
  const path = req.url ?? "";
  const body = req.method === "GET" && /\/regulatoryListings(\?|$)/.test(path) ? PAGE_JSON : LISTING_JSON;
  req.on("data", () => {});
  req.on("end", () => {
    res.statusCode = 200;
    res.setHeader("content-type", "application/json");
    res.setHeader("content-length", body.length);
    res.end(body);
  });
}

function handler(
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
): void {
  if (req.url?.startsWith("/v1beta1/")) rest(req, res);
  else connectHandler(req, res);
}

const h1 = http.createServer(handler);
h1.keepAliveTimeout = 60_000;
const h2 = http2.createServer(handler);

function listen(server: http.Server | http2.Http2Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
  });
}

const [h2Port, h1Port] = await Promise.all([listen(h2), listen(h1)]);
process.stdout.write(`${JSON.stringify({ ceiling: { h2: h2Port, h1: h1Port } })}\n`);

const stop = () => {
  h1.closeAllConnections();
  h1.close();
  h2.close();
  process.exit(0);
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
