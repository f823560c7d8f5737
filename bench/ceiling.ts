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
 *
 * With FLOOR_DATABASE_URL it is the floor instead: the same handlers, each
 * making the one PostgreSQL statement its operation needs, prepared, through
 * postgres.js (a pool of 10, as the server's), on a table of its own filled
 * with 1,000 rows: get a row by key, list a page of LIST_PAGE_SIZE rows,
 * create an insert. The answers stay constant (no row mapping, no auth,
 * validation, logging or metrics): what any server that reads and writes
 * PostgreSQL through connect-node pays at the least, per request.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import postgres from "postgres";
import { RegulatoryListings } from "../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import {
  BENCH_PROJECT,
  LIST_PAGE_SIZE,
  sampleListing,
  sampleListingJson,
  samplePage,
  samplePageJson,
} from "./fixture.js";

const LISTING = sampleListing(BENCH_PROJECT, "c000000000000000", new Date());
const PAGE = samplePage(BENCH_PROJECT);
const LISTING_JSON = Buffer.from(sampleListingJson(BENCH_PROJECT, "c000000000000000"));
const PAGE_JSON = Buffer.from(samplePageJson(BENCH_PROJECT));

/** The floor's statements (FLOOR_DATABASE_URL), or nothing: the ceiling. */
const floor = process.env.FLOOR_DATABASE_URL ? await openFloor(process.env.FLOOR_DATABASE_URL) : undefined;

async function openFloor(url: string) {
  const sql = postgres(url, { max: 10, onnotice: () => {} });
  await sql`create table if not exists floor_listings (
    project text not null, id text not null, display_name text not null, body text not null,
    create_time timestamptz not null default now(), primary key (project, id))`;
  await sql`insert into floor_listings (project, id, display_name, body)
    select ${BENCH_PROJECT}, lpad(i::text, 16, '0'), 'Listing ' || i, repeat('x', 200)
    from generate_series(1, 1000) i on conflict do nothing`;
  let created = 0;
  return {
    get: () =>
      sql`select * from floor_listings where project = ${BENCH_PROJECT} and id = ${"0000000000000500"}`,
    list: () =>
      sql`select * from floor_listings where project = ${BENCH_PROJECT} and id > ${""} order by id limit ${LIST_PAGE_SIZE + 1}`,
    create: () =>
      sql`insert into floor_listings (project, id, display_name, body)
        values (${BENCH_PROJECT}, ${`c${process.pid}-${++created}`}, ${"Listing"}, ${"x".repeat(200)})`,
    end: () => sql.end({ timeout: 5 }),
  };
}

const routes = (router: ConnectRouter) => {
  router.service(
    RegulatoryListings,
    floor === undefined
      ? {
          createRegulatoryListing: () => LISTING,
          getRegulatoryListing: () => LISTING,
          listRegulatoryListings: () => PAGE,
        }
      : {
          createRegulatoryListing: async () => {
            await floor.create();
            return LISTING;
          },
          getRegulatoryListing: async () => {
            await floor.get();
            return LISTING;
          },
          listRegulatoryListings: async () => {
            await floor.list();
            return PAGE;
          },
        },
  );
};

const connectHandler = connectNodeAdapter({ routes });

/** REST: the request body is read (as any server must), then a constant JSON answer. */
function rest(
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
): void {
  const path = req.url ?? "";
  const list = req.method === "GET" && /\/regulatoryListings(\?|$)/.test(path);
  const body = list ? PAGE_JSON : LISTING_JSON;
  const answer = () => {
    res.statusCode = 200;
    res.setHeader("content-type", "application/json");
    res.setHeader("content-length", body.length);
    res.end(body);
  };
  req.on("data", () => {});
  req.on("end", () => {
    if (floor === undefined) return answer();
    (list ? floor.list() : req.method === "GET" ? floor.get() : floor.create()).then(answer, () => {
      res.statusCode = 500;
      res.end();
    });
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
  void (floor?.end() ?? Promise.resolve()).finally(() => process.exit(0));
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
