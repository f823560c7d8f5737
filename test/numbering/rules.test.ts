/**
 * The numbering rules that need no database: E.164 arithmetic, search
 * prefixes, handler URI kinds, split plans, lifecycle transitions and
 * compliance.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  addToNumber,
  inRange,
  numberFacts,
  numberOfName,
  phoneNumberName,
  rangeEnd,
  rangeSize,
  searchPrefix,
} from "../../src/numbering/numbers.js";
import { isCompliant } from "../../src/numbering/phone-number-instances/compliance.js";
import {
  handlerUriViolations,
  isHttpUrl,
  isSipUri,
  isTelUri,
} from "../../src/numbering/phone-number-instances/handler-uris.js";
import {
  type LifecycleAction,
  type LifecycleState,
  transition,
} from "../../src/numbering/phone-number-instances/lifecycle.js";
import { planSplit } from "../../src/numbering/phone-number-instances/ranges.js";

function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return ConnectError.from(err).findDetails(ErrorInfoSchema)[0]?.reason;
  }
  return undefined;
}

describe("E.164 numbers", () => {
  it("adds to the digits with BigInt, never changing their count", () => {
    expect(addToNumber("+61255501000", 999)).toBe("+61255501999");
    expect(addToNumber("+999999999999998", 1)).toBe("+999999999999999"); // 15 digits, beyond 2^53
    expect(addToNumber("+999999999999999", 1)).toBeUndefined();
    expect(addToNumber("+99", 1)).toBeUndefined();
    expect(addToNumber("+619", 1)).toBe("+620");
    expect(rangeEnd("+61255501000", 100)).toBe("+61255501099");
    expect(rangeEnd("+61255501000", 0)).toBeUndefined();
    expect(rangeSize("+61255501000", "+61255501099")).toBe(100n);
    expect(inRange("+61255501050", "+61255501000", "+61255501099")).toBe(true);
    expect(inRange("+6125550105", "+61255501000", "+61255501099")).toBe(false);
    expect(inRange("+61255501100", "+61255501000", "+61255501099")).toBe(false);
  });

  it("reads regions and types from libphonenumber", () => {
    expect(numberFacts("+61255501234")).toEqual({ country: "AU", type: "LOCAL" });
    expect(numberFacts("+61491570156")).toEqual({ country: "AU", type: "MOBILE" });
    expect(numberFacts("+611800160401")).toEqual({ country: "AU", type: "TOLL_FREE" });
    expect(numberFacts("+12025550123")).toEqual({ country: "US", type: "LOCAL" });
    expect(numberFacts("+6100000")).toBeUndefined();
    expect(numberFacts("+61 2 5550 1234")).toBeUndefined();
  });

  it("names numbers phoneNumbers/{digits} and reads names with or without +", () => {
    expect(phoneNumberName("+61255501234")).toBe("phoneNumbers/61255501234");
    expect(numberOfName("phoneNumbers/61255501234")).toBe("+61255501234");
    expect(numberOfName("phoneNumbers/+61255501234")).toBe("+61255501234");
    expect(numberOfName("phoneNumbers/0255501234")).toBeUndefined();
    expect(numberOfName("numbers/61255501234")).toBeUndefined();
  });

  it.each([
    ["AU", "02", "+612"],
    ["AU", "2", "+612"],
    ["AU", "0255501", "+61255501"],
    ["AU", "+6125", "+6125"],
    ["AU", "", ""],
    ["AU", "+", ""],
    ["US", "202", "+1202"],
    ["GB", "020", "+4420"],
  ])("reads the %s search prefix %j as %j", (region, prefix, expected) => {
    expect(searchPrefix(region, prefix)).toBe(expected);
  });
});

describe("handler URIs", () => {
  it.each([
    "https://example.com",
    "http://example.com:8080/calls?x=1#f",
    "HTTPS://EXAMPLE.COM/",
    "https://user:pass@example.com/hook",
    "http://127.0.0.1/",
    "https://[2001:db8::1]/",
  ])("takes %s as an http(s) URL", (uri) => {
    expect(isHttpUrl(uri)).toBe(true);
  });

  it.each([
    "example.com",
    "/relative",
    "https://",
    "https:example.com",
    "http:/example.com",
    "ftp://example.com/",
    " https://example.com/",
    "https://example.com/\n",
    "https://exa mple.com/",
    "https://example.com/a\tb",
    "javascript:alert(1)",
  ])("refuses %j as an http(s) URL", (uri) => {
    expect(isHttpUrl(uri)).toBe(false);
  });

  it.each([
    "sip:alice@example.com",
    "sip:+61255501234@pbx.example.com:5060",
    "sip:alice@10.0.0.1",
    "sip:alice@10.0.0.1:5061",
    "sip:alice@[2001:db8::1]:5060",
    "sip:a.b-c_d!~*'()&=+$,;?/%41@host-1.example.com",
    "SIP:alice@example.com",
  ])("takes %s as a sip: URI", (uri) => {
    expect(isSipUri(uri)).toBe(true);
  });

  it.each([
    "sip:example.com",
    "sip:@example.com",
    "sip:alice@",
    "sips:alice@example.com",
    "sip:alice@example.com:0",
    "sip:alice@example.com:65536",
    "sip:alice@example.com;transport=tls",
    "sip:alice@-example.com",
    "sip:alice@999.0.0.1",
    "sip:alice@[nope]",
    "sip:al ice@example.com",
    "sip:alice@example.com ",
  ])("refuses %j as a sip: URI", (uri) => {
    expect(isSipUri(uri)).toBe(false);
  });

  it.each([
    ["tel:+61491570156", true],
    ["tel:+12025550123", true],
    ["tel:0491570156", false],
    ["tel:+61-491-570-156", false],
    ["tel:+6100000", false],
    ["tel:", false],
    ["tel:+61491570156;ext=1", false],
  ])("tel: %s -> %s", (uri, ok) => {
    expect(isTelUri(uri)).toBe(ok);
  });

  it("names each bad element by its index; message handlers take http(s) only", () => {
    expect(
      handlerUriViolations(
        "incoming_call_handler_uris",
        ["https://a.example.com/", "sip:b@example.com", "tel:+61491570156", "mailto:x@example.com", ""],
        "phone_number_instance",
      ).map((v) => v.field),
    ).toEqual([
      "phone_number_instance.incoming_call_handler_uris[3]",
      "phone_number_instance.incoming_call_handler_uris[4]",
    ]);
    expect(
      handlerUriViolations(
        "incoming_message_handler_uris",
        ["https://a.example.com/", "sip:b@example.com", "tel:+61491570156"],
        "phone_number_instance",
      ).map((v) => v.field),
    ).toEqual([
      "phone_number_instance.incoming_message_handler_uris[1]",
      "phone_number_instance.incoming_message_handler_uris[2]",
    ]);
    expect(
      handlerUriViolations("incoming_message_handler_uris", Array(6).fill("https://a.example.com/"), "x").map(
        (v) => v.field,
      ),
    ).toEqual(["x.incoming_message_handler_uris"]);
  });
});

describe("splitting ranges", () => {
  const span = { start: "+61255501100", end: "+61255501199", size: 100 };

  it("keeps size numbers at the start and makes a range of the rest", () => {
    expect(planSplit("r", span, 20)).toEqual({
      first: { start: "+61255501100", end: "+61255501119", size: 20 },
      second: { start: "+61255501120", end: "+61255501199", size: 80 },
    });
    expect(planSplit("r", span, 1).second.size).toBe(99);
    expect(planSplit("r", span, 99).second).toEqual({ start: "+61255501199", end: "+61255501199", size: 1 });
  });

  it("refuses sizes outside 1..size-1 (INVALID_ARGUMENT) and single numbers (FAILED_PRECONDITION)", () => {
    for (const size of [0, -3, 100, 250, 1.5]) {
      expect(() => planSplit("r", span, size)).toThrowError(
        expect.objectContaining({ code: Code.InvalidArgument }),
      );
    }
    expect(reasonOf(() => planSplit("r", undefined, 1))).toBe("NOT_A_RANGE");
    expect(reasonOf(() => planSplit("r", { ...span, end: span.start, size: 1 }, 1))).toBe("RANGE_TOO_SMALL");
  });
});

describe("lifecycle", () => {
  const table: [LifecycleState, LifecycleAction, LifecycleState | string][] = [
    ["ACTIVE", "suspend", "SUSPENDED"],
    ["SUSPENDED", "suspend", "SUSPENDED"],
    ["PENDING", "suspend", "PORT_IN_PENDING"],
    ["DELETED", "suspend", "INSTANCE_DELETED"],
    ["SUSPENDED", "resume", "ACTIVE"],
    ["ACTIVE", "resume", "ACTIVE"],
    ["PENDING", "resume", "PORT_IN_PENDING"],
    ["DELETED", "resume", "INSTANCE_DELETED"],
    ["PENDING", "completePortIn", "ACTIVE"],
    ["ACTIVE", "completePortIn", "NOT_PENDING"],
    ["SUSPENDED", "completePortIn", "NOT_PENDING"],
    ["DELETED", "completePortIn", "INSTANCE_DELETED"],
    ["ACTIVE", "delete", "DELETED"],
    ["SUSPENDED", "delete", "DELETED"],
    ["PENDING", "delete", "DELETED"],
    ["DELETED", "delete", "INSTANCE_DELETED"],
    ["ACTIVE", "change", "ACTIVE"],
    ["PENDING", "change", "PENDING"],
    ["SUSPENDED", "change", "SUSPENDED"],
    ["DELETED", "change", "INSTANCE_DELETED"],
  ];
  it.each(table)("%s --%s--> %s", (from, action, to) => {
    if (["ACTIVE", "SUSPENDED", "PENDING", "DELETED"].includes(to)) {
      expect(transition("i", from, action)).toBe(to);
    } else {
      expect(reasonOf(() => transition("i", from, action))).toBe(to);
    }
  });
});

describe("compliance", () => {
  const listing = { valid: true, verified: false, regionCode: "AU" };
  it.each([
    ["no listing", { countryCode: "AU", numberType: "LOCAL" }, null, false],
    ["a valid AU listing, local number", { countryCode: "AU", numberType: "LOCAL" }, listing, true],
    ["an unverified listing, mobile number", { countryCode: "AU", numberType: "MOBILE" }, listing, false],
    [
      "a verified listing, mobile number",
      { countryCode: "AU", numberType: "MOBILE" },
      { ...listing, verified: true },
      true,
    ],
    [
      "a verified listing, toll-free number",
      { countryCode: "AU", numberType: "TOLL_FREE" },
      { ...listing, verified: true },
      true,
    ],
    [
      "an invalid listing",
      { countryCode: "AU", numberType: "LOCAL" },
      { ...listing, valid: false, verified: true },
      false,
    ],
    ["a listing of another country", { countryCode: "US", numberType: "LOCAL" }, listing, false],
  ] as const)("%s -> %s", (_name, number, l, expected) => {
    expect(isCompliant(number, l)).toBe(expected);
  });
});
