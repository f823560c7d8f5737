/**
 * `boundedError` (src/api/errors.ts), which the error interceptor applies to
 * every error a call ends with: whoever built an error, what it echoes is
 * cut, so its gRPC trailers stay small. Over the wire: long-input.test.ts.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  HelpSchema,
  ResourceInfoSchema,
} from "../../gen/google/rpc/error_details_pb.js";
import {
  badField,
  boundedError,
  failedPrecondition,
  invalidArgument,
  MAX_DETAILS_BYTES,
  MAX_MESSAGE_CHARS,
  notFound,
  rpcError,
} from "../../src/api/errors.js";

const LONG = "z".repeat(60_000);

describe("boundedError", () => {
  it("returns the errors of the helpers unchanged when they echo nothing long", () => {
    for (const err of [
      badField("cidr_blocks[0].cidr_block", "must be a valid IPv4 prefix"),
      notFound("SipDomain", LONG),
      failedPrecondition("DOMAIN_NOT_FOUND", "no SIP domain is named x", { to: "1001" }),
    ]) {
      expect(boundedError(err)).toBe(err);
    }
  });

  it("cuts ErrorInfo metadata values and keys given at length, keeping code, reason and message", () => {
    const err = failedPrecondition("DOMAIN_NOT_FOUND", "no SIP domain is named x", {
      to: LONG,
      [LONG]: "v",
      sip_domain: "x",
    });
    const out = boundedError(err);
    expect(out).not.toBe(err);
    expect(out.code).toBe(Code.FailedPrecondition);
    expect(out.rawMessage).toBe("no SIP domain is named x");
    const info = out.findDetails(ErrorInfoSchema)[0]!;
    expect(info.reason).toBe("DOMAIN_NOT_FOUND");
    expect(info.domain).toBe("switchboard");
    expect(info.metadata.to).toBe(`${"z".repeat(199)}…`);
    expect(info.metadata[`${"z".repeat(199)}…`]).toBe("v");
    expect(info.metadata.sip_domain).toBe("x");
  });

  it("cuts the message, BadRequest and ResourceInfo of an error built by hand", () => {
    const err = new ConnectError(LONG, Code.InvalidArgument, undefined, [
      {
        desc: BadRequestSchema,
        value: create(BadRequestSchema, {
          fieldViolations: Array.from({ length: 40 }, () => ({ field: LONG, description: LONG })),
        }),
      },
      { desc: ResourceInfoSchema, value: create(ResourceInfoSchema, { resourceName: LONG }) },
    ]);
    const out = boundedError(err);
    expect(out.rawMessage.length).toBe(MAX_MESSAGE_CHARS);
    const violations = out.findDetails(BadRequestSchema)[0]!.fieldViolations;
    expect(violations).toHaveLength(25);
    expect(violations[0]!.field.length).toBe(256);
    expect(violations[0]!.description.length).toBe(256);
    expect(out.findDetails(ResourceInfoSchema)[0]!.resourceName.length).toBe(200);
  });

  it("keeps the first violations of a BadRequest too large in bytes (text of three bytes a character)", () => {
    const wide = "中".repeat(20_000);
    const err = invalidArgument(
      Array.from({ length: 30 }, (_, i) => ({ field: `labels["${i}${wide}"]`, description: wide })),
    );
    const out = boundedError(err);
    expect(out).not.toBe(err);
    expect(out.rawMessage.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
    expect(out.rawMessage.startsWith('30 invalid fields: labels["0中')).toBe(true);
    expect(out.findDetails(ErrorInfoSchema)[0]!.metadata.violations).toBe("30");
    const violations = out.findDetails(BadRequestSchema)[0]!.fieldViolations;
    expect(violations.length).toBeGreaterThan(0);
    expect(violations.length).toBeLessThan(25);
    expect(violations[0]!.field.startsWith('labels["0中')).toBe(true);
    expect(violations[1]!.field.startsWith('labels["1中')).toBe(true);
    const bytes = out.details.reduce(
      (n, d) =>
        n + ("desc" in d ? toBinary(d.desc, create(d.desc, d.value as never)).length : d.value.length),
      0,
    );
    expect(bytes).toBeLessThanOrEqual(MAX_DETAILS_BYTES + 200);
  });

  it("drops details past MAX_DETAILS_BYTES, but never the ErrorInfo", () => {
    const help = (n: number) => ({
      desc: HelpSchema,
      value: create(HelpSchema, {
        links: Array.from({ length: 40 }, (_, i) => ({
          description: `${n}-${i}`,
          url: "https://x/".repeat(10),
        })),
      }),
    });
    const err = rpcError(Code.ResourceExhausted, "QUOTA", "too many");
    err.details.push(help(1), help(2), help(3), help(4));
    const out = boundedError(err);
    expect(out.findDetails(ErrorInfoSchema)[0]!.reason).toBe("QUOTA");
    const kept = out.findDetails(HelpSchema);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(4);
    expect(kept.reduce((n, h) => n + toBinary(HelpSchema, h).length, 0)).toBeLessThanOrEqual(
      MAX_DETAILS_BYTES,
    );
  });
});
