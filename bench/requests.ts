/**
 * The requests h2load repeats: create / get / list of regulatory listings
 * as gRPC, Connect JSON and REST, over HTTP/2 cleartext or HTTP/1.1, built
 * here once per scenario (h2load sends the same bytes every time).
 */
import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import {
  CreateRegulatoryListingRequestSchema,
  GetRegulatoryListingRequestSchema,
  ListRegulatoryListingsRequestSchema,
  RegulatoryListings,
} from "../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { LIST_PAGE_SIZE, LISTING_INIT, LISTING_JSON } from "./fixture.js";
import type { H2loadRequest } from "./h2load.js";

export type Operation = "create" | "get" | "list";
export const OPERATIONS: readonly Operation[] = ["create", "get", "list"];

/** Protocol and HTTP version of a load scenario. */
export type LoadTransport = "grpc" | "connect" | "rest" | "connect-h1" | "rest-h1";
export const LOAD_TRANSPORTS: readonly LoadTransport[] = ["grpc", "connect", "rest", "connect-h1", "rest-h1"];

/** What the REST figures of a transport are compared with (same HTTP version). */
export const CONNECT_OF_REST: Partial<Record<LoadTransport, LoadTransport>> = {
  rest: "connect",
  "rest-h1": "connect-h1",
};

const METHOD: Record<Operation, string> = {
  create: "CreateRegulatoryListing",
  get: "GetRegulatoryListing",
  list: "ListRegulatoryListings",
};

export function rpcMethodName(op: Operation): string {
  return METHOD[op];
}

/** A gRPC length-prefixed message (uncompressed). */
function grpcFrame(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.length);
  new DataView(out.buffer).setUint32(1, message.length);
  out.set(message, 5);
  return out;
}

function rpcMessage(op: Operation, project: string, getName: string) {
  switch (op) {
    case "create":
      return {
        schema: CreateRegulatoryListingRequestSchema,
        message: create(CreateRegulatoryListingRequestSchema, {
          parent: `projects/${project}`,
          regulatoryListing: LISTING_INIT,
        }),
      } as const;
    case "get":
      return {
        schema: GetRegulatoryListingRequestSchema,
        message: create(GetRegulatoryListingRequestSchema, { name: getName }),
      } as const;
    case "list":
      return {
        schema: ListRegulatoryListingsRequestSchema,
        message: create(ListRegulatoryListingsRequestSchema, {
          parent: `projects/${project}`,
          pageSize: LIST_PAGE_SIZE,
        }),
      } as const;
  }
}

/**
 * The request for `op` over `transport` against `base` (http://127.0.0.1:port),
 * authenticated with `token`; `getName` is the listing the get scenario reads.
 */
export function loadRequest(
  transport: LoadTransport,
  op: Operation,
  base: string,
  token: string,
  project: string,
  getName: string,
): H2loadRequest {
  const h1 = transport.endsWith("-h1");
  const authorization = `Bearer ${token}`;
  const path = `${base}/${RegulatoryListings.typeName}/${METHOD[op]}`;
  const { schema, message } = rpcMessage(op, project, getName);
  if (transport === "grpc") {
    return {
      url: path,
      // biome-ignore lint/suspicious/noExplicitAny: one of three request schemas with its own message
      body: grpcFrame(toBinary(schema as any, message)),
      headers: { authorization, "content-type": "application/grpc", te: "trailers" },
      h1,
    };
  }
  if (transport === "connect" || transport === "connect-h1") {
    return {
      url: path,
      // biome-ignore lint/suspicious/noExplicitAny: as above
      body: toJsonString(schema as any, message),
      headers: { authorization, "content-type": "application/json", "connect-protocol-version": "1" },
      h1,
    };
  }
  const collection = `${base}/v1beta1/projects/${project}/regulatoryListings`;
  switch (op) {
    case "create":
      return {
        url: collection,
        body: LISTING_JSON,
        headers: { authorization, "content-type": "application/json" },
        h1,
      };
    case "get":
      return { url: `${base}/v1beta1/${getName}`, headers: { authorization }, h1 };
    case "list":
      return { url: `${collection}?pageSize=${LIST_PAGE_SIZE}`, headers: { authorization }, h1 };
  }
}
