/** What the benchmark sends and what the ceiling server answers. */
import { create, type MessageInitShape, toJsonString } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ListRegulatoryListingsResponseSchema,
  RegulatoryListingSchema,
} from "../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";

/** The operator token the servers under test are started with (>= 16 characters). */
export const BENCH_OPERATOR_TOKEN = "bench-operator-token-0123456789abcdef";

/** The project the create / get / list scenarios work in. */
export const BENCH_PROJECT = "bench";

/** Page size of every measured list call (the API's default). */
export const LIST_PAGE_SIZE = 10;

/** A valid Australian business listing, as a proto message init. */
export const LISTING_INIT = {
  displayName: "Head office",
  address: {
    addressLines: ["1 Example St"],
    locality: "Sydney",
    administrativeArea: "NSW",
    postalCode: "2000",
    regionCode: "AU",
  },
  entity: { case: "business", value: { business: "Example Pty Ltd" } },
} satisfies MessageInitShape<typeof RegulatoryListingSchema>;

/** The same listing as REST (proto3 JSON) request body. */
export const LISTING_JSON = JSON.stringify({
  displayName: "Head office",
  address: {
    addressLines: ["1 Example St"],
    locality: "Sydney",
    administrativeArea: "NSW",
    postalCode: "2000",
    regionCode: "AU",
  },
  business: { business: "Example Pty Ltd" },
});

/** What the service answers for a listing: the input plus the output-only fields. */
export function sampleListing(project: string, id: string, createTime: Date) {
  return create(RegulatoryListingSchema, {
    ...LISTING_INIT,
    name: `projects/${project}/regulatoryListings/${id}`,
    createTime: timestampFromDate(createTime),
    valid: true,
    verified: false,
  });
}

/** A full first page as the service answers it: LIST_PAGE_SIZE listings and a next page token. */
export function samplePage(project: string) {
  const now = Date.now();
  return create(ListRegulatoryListingsResponseSchema, {
    regulatoryListings: Array.from({ length: LIST_PAGE_SIZE }, (_, i) =>
      sampleListing(project, `c${String(i).padStart(15, "0")}`, new Date(now - i)),
    ),
    // About the size of a real token (base64url JSON of time, id and query hash).
    nextPageToken: Buffer.from(
      JSON.stringify({ v: 1, t: now, i: "c000000000000009", q: "0123456789abcdefghijkl" }),
    ).toString("base64url"),
  });
}

export function sampleListingJson(project: string, id: string): string {
  return toJsonString(RegulatoryListingSchema, sampleListing(project, id, new Date()));
}

export function samplePageJson(project: string): string {
  return toJsonString(ListRegulatoryListingsResponseSchema, samplePage(project));
}
