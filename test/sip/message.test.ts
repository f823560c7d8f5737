import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SipParseError } from "../../src/sip/errors.js";
import {
  callIdOf,
  cseqOf,
  fromOf,
  MAX_MESSAGE_BYTES,
  parseMessage,
  type SipRequest,
  serialize,
  toOf,
  topVia,
  vias,
} from "../../src/sip/message.js";
import { formatUri, parseNameAddr, parseUri } from "../../src/sip/uri.js";

const crlf = (lines: string[]) => Buffer.from(`${lines.join("\r\n")}`);

const INVITE = crlf([
  "INVITE sip:bob@biloxi.example.com;transport=udp SIP/2.0",
  "Via: SIP/2.0/UDP pc33.atlanta.example.com:5062;branch=z9hG4bK776asdhds;rport",
  "Max-Forwards: 70",
  'To: "Bob" <sip:bob@biloxi.example.com>',
  "From: Alice <sip:alice@atlanta.example.com>;tag=1928301774",
  "Call-ID: a84b4c76e66710@pc33.atlanta.example.com",
  "CSeq: 314159 INVITE",
  "Contact: <sip:alice@pc33.atlanta.example.com>",
  "Content-Type: application/sdp",
  "Content-Length: 4",
  "",
  "v=0\n",
]);

function parseError(data: Buffer, datagram = true): SipParseError {
  try {
    parseMessage(data, datagram);
  } catch (e) {
    if (e instanceof SipParseError) return e;
    throw e;
  }
  throw new Error("parsed");
}

describe("SIP message parser", () => {
  it("parses a request's start line, headers and body", () => {
    const m = parseMessage(INVITE) as SipRequest;
    expect(m.kind).toBe("request");
    expect(m.method).toBe("INVITE");
    expect(m.uri).toMatchObject({ scheme: "sip", user: "bob", host: "biloxi.example.com", port: undefined });
    expect(m.uri.params.get("transport")).toBe("udp");
    expect(topVia(m)).toMatchObject({ transport: "UDP", host: "pc33.atlanta.example.com", port: 5062 });
    expect(topVia(m).params.get("rport")).toBeNull();
    expect(fromOf(m).params.get("tag")).toBe("1928301774");
    expect(fromOf(m).displayName).toBe("Alice");
    expect(toOf(m).displayName).toBe("Bob");
    expect(cseqOf(m)).toEqual({ seq: 314159, method: "INVITE" });
    expect(callIdOf(m)).toBe("a84b4c76e66710@pc33.atlanta.example.com");
    expect(m.body.toString()).toBe("v=0\n");
  });

  it("round-trips through the serializer", () => {
    const m = parseMessage(INVITE);
    const again = parseMessage(serialize(m));
    expect(serialize(again).equals(serialize(m))).toBe(true);
    expect(again.headers.entries()).toEqual(m.headers.entries());
  });

  it("serializes bytes that are kept into an ArrayBuffer of their own, the same bytes", () => {
    const m = parseMessage(INVITE);
    const pooled = serialize(m);
    const kept = serialize(m, true);
    expect(kept.equals(pooled)).toBe(true);
    // Not a slice of Buffer's shared pool, which would live as long as any of its slices.
    expect(kept.byteOffset).toBe(0);
    expect(kept.buffer.byteLength).toBe(kept.length);
    expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.length);
  });

  it("unfolds continuation lines and reads compact header names", () => {
    const m = parseMessage(
      crlf([
        "OPTIONS sip:carol@chicago.example.com SIP/2.0",
        "v: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKa, SIP/2.0/TCP",
        "  192.0.2.2:5070 ;branch=z9hG4bKb",
        "t: <sip:carol@chicago.example.com>",
        "f: <sip:a@example.com>;tag=1",
        "i: compact@example.com",
        "CSeq: 1 OPTIONS",
        'm: <sip:a@192.0.2.1>, "x, y" <sip:b@192.0.2.1>',
        "k: 100rel,timer",
        "s: hello",
        "l: 0",
        "",
        "",
      ]),
    );
    expect(vias(m).map((v) => [v.host, v.port, v.params.get("branch")])).toEqual([
      ["192.0.2.1", undefined, "z9hG4bKa"],
      ["192.0.2.2", 5070, "z9hG4bKb"],
    ]);
    expect(m.headers.getAll("Contact")).toEqual(["<sip:a@192.0.2.1>", '"x, y" <sip:b@192.0.2.1>']);
    expect(parseNameAddr(m.headers.getAll("Contact")[1]!, "Contact").displayName).toBe("x, y");
    expect(m.headers.getAll("Supported")).toEqual(["100rel", "timer"]);
    expect(m.headers.get("Subject")).toBe("hello");
    expect(m.headers.get("call-id")).toBe("compact@example.com");
  });

  it("parses URIs with user parameters, passwords, IPv6 hosts and headers", () => {
    const u = parseUri("sips:alice:secret@[2001:db8::1]:5061;transport=tls;lr?subject=x%20y");
    expect(u).toMatchObject({
      scheme: "sips",
      user: "alice:secret",
      host: "[2001:db8::1]",
      port: 5061,
      headers: "subject=x%20y",
    });
    expect(u.params.get("lr")).toBeNull();
    expect(formatUri(u)).toBe("sips:alice:secret@[2001:db8::1]:5061;transport=tls;lr?subject=x%20y");
    expect(parseUri("tel:+61290001234").opaque).toBe("+61290001234");
    expect(() => parseUri("sip:a@b@bad host")).toThrow(SipParseError);
    expect(() => parseUri("sip:alice@example.com:99999")).toThrow(SipParseError);
  });

  it("frames a datagram's body by Content-Length and drops extra octets", () => {
    const m = parseMessage(Buffer.concat([INVITE, Buffer.from("garbage")]));
    expect(m.body.toString()).toBe("v=0\n");
    expect(parseError(Buffer.concat([INVITE, Buffer.from("garbage")]), false).reason).toBe(
      "Content-Length smaller than body",
    );
  });

  it("names the problem in the error (the 400's reason phrase)", () => {
    const text = INVITE.toString();
    expect(parseError(Buffer.from(text.replace("CSeq: 314159 INVITE", "CSeq: x INVITE"))).reason).toBe(
      "bad CSeq",
    );
    expect(parseError(Buffer.from(text.replace(/Call-ID: .*\r\n/, ""))).reason).toBe("Missing Call-ID");
    expect(parseError(Buffer.from(text.replace("Max-Forwards: 70", "Max-Forwards: 256"))).reason).toBe(
      "Bad Max-Forwards",
    );
    const e = parseError(Buffer.from(text.replace("SIP/2.0\r\n", "SIP/3.0\r\n")));
    expect([e.status, e.reason]).toEqual([505, "Version Not Supported"]);
    expect(e.request?.method).toBe("INVITE");
    expect(e.request?.headers.get("CSeq")).toBe("314159 INVITE");
  });

  it("takes an empty list where RFC 3261's grammar makes the list optional (Supported, Allow), not elsewhere", () => {
    // baresip 1.0 sends `Supported:` with no value in its INVITE.
    const text = INVITE.toString();
    const m = parseMessage(
      Buffer.from(
        text.replace("Max-Forwards: 70\r\n", "Max-Forwards: 70\r\nSupported:\r\nAllow: \r\nk:\r\n"),
      ),
    );
    expect(m.headers.getAll("Supported")).toEqual([]);
    expect(m.headers.getAll("Allow")).toEqual([]);
    expect(
      parseError(Buffer.from(text.replace("Max-Forwards: 70\r\n", "Max-Forwards: 70\r\nRequire:\r\n")))
        .reason,
    ).toBe("Empty value in Require");
    expect(
      parseError(
        Buffer.from(text.replace("Max-Forwards: 70\r\n", "Max-Forwards: 70\r\nSupported: timer,,100rel\r\n")),
      ).reason,
    ).toBe("Empty value in Supported");
  });

  it("refuses a message above 64 KiB with 413", () => {
    const big = Buffer.concat([INVITE, Buffer.alloc(MAX_MESSAGE_BYTES, 0x61)]);
    expect(parseError(big).status).toBe(413);
  });

  it("throws nothing but SipParseError on arbitrary input (fuzzed)", () => {
    const valid = INVITE.toString("latin1");
    const check = (data: Buffer) => {
      try {
        const m = parseMessage(data);
        serialize(m);
      } catch (e) {
        if (!(e instanceof SipParseError)) throw e;
      }
      try {
        parseMessage(data, false);
      } catch (e) {
        if (!(e instanceof SipParseError)) throw e;
      }
    };
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), (bytes) => check(Buffer.from(bytes))),
      { numRuns: 500 },
    );
    // Messages assembled from SIP-shaped pieces reach the deeper grammars.
    const piece = fc.oneof(
      fc.constantFrom(
        "INVITE sip:a@b SIP/2.0\r\n",
        "SIP/2.0 200 OK\r\n",
        "Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKx;rport\r\n",
        "From: <sip:a@b>;tag=1\r\n",
        'To: "x" <sip:b@c>\r\n',
        "Call-ID: c\r\n",
        "CSeq: 1 INVITE\r\n",
        "Contact: *\r\n",
        "l: 3\r\n",
        "\r\n",
        " ",
        ";",
        ",",
        "<",
        ">",
        '"',
        "sip:",
        "@",
        "[::1]",
        ":65536",
      ),
      fc.string({ maxLength: 12, unit: "grapheme-ascii" }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (parts) => check(Buffer.from(parts.join("")))),
      { numRuns: 1000 },
    );
    // Mutations of a valid message: a character inserted, replaced or removed anywhere.
    const alphabet = fc.constantFrom(...'\r\n \t:;,<>"\\@?=%/0aZ\x00\x7f\u00e9'.split(""));
    fc.assert(
      fc.property(
        fc.nat(valid.length - 1),
        alphabet,
        fc.constantFrom("insert", "replace", "delete"),
        (at, ch, op) => {
          const mutated =
            op === "insert"
              ? valid.slice(0, at) + ch + valid.slice(at)
              : op === "replace"
                ? valid.slice(0, at) + ch + valid.slice(at + 1)
                : valid.slice(0, at) + valid.slice(at + 1);
          check(Buffer.from(mutated, "latin1"));
        },
      ),
      { numRuns: 1000 },
    );
  });
});
