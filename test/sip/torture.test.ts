/**
 * RFC 4475 torture messages (test/sip/fixtures/rfc4475): each valid one
 * parses, each invalid one gets the answer the RFC gives (400, 505, 416, 501)
 * from a real endpoint over TCP, and broken responses are dropped.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SipEndpoint } from "../../src/sip/endpoint.js";
import { SipParseError } from "../../src/sip/errors.js";
import { fromOf, parseMessage, type SipRequest, toOf, vias } from "../../src/sip/message.js";
import { startEndpoint, TcpUa, tcpPort, UdpUa, udpPort } from "./ua.js";

const fixture = (name: string) => readFileSync(new URL(`./fixtures/rfc4475/${name}.dat`, import.meta.url));

/** Messages whose syntax is valid (RFC 4475 §3.1.1, §3.2, §3.3). */
const VALID = [
  "wsinv",
  "intmeth",
  "esc01",
  "escnull",
  "esc02",
  "lwsdisp",
  "longreq",
  "dblreq",
  "semiuri",
  "transports",
  "noreason",
  "baddate",
  "mismatch01",
  "mismatch02",
  "badbranch",
  "unkscm",
  "novelsc",
  "unksm2",
  "bext01",
  "regaut01",
  "bcast",
  "zeromf",
];

/** Invalid on a datagram: the parse error and its status (RFC 4475 §3.1.2). */
const INVALID: Array<[string, number]> = [
  ["badinv01", 400],
  ["clerr", 400],
  ["ncl", 400],
  ["scalar02", 400],
  ["scalarlg", 400],
  ["quotbal", 400],
  ["ltgtruri", 400],
  ["lwsruri", 400],
  ["lwsstart", 400],
  ["trws", 400],
  ["escruri", 400],
  ["regbadct", 400],
  ["badaspec", 400],
  ["baddn", 400],
  ["badvers", 505],
  ["bigcode", 400],
  ["insuf", 400],
  ["mcl01", 400],
  ["multi01", 400],
];

/** What an endpoint answers each request with over TCP (INVITE/REGISTER handlers answer 200). */
const ANSWERS: Array<[string, number]> = [
  // wsinv's To has a tag: a request inside a dialog this UAS does not have (RFC 3261 §12.2.2).
  ["wsinv", 481],
  ["intmeth", 501],
  ["esc01", 200],
  ["escnull", 200],
  ["esc02", 501],
  ["lwsdisp", 200],
  ["longreq", 200],
  ["semiuri", 200],
  ["transports", 200],
  ["baddate", 200],
  ["badbranch", 200],
  ["badinv01", 400],
  ["ncl", 400],
  ["scalar02", 400],
  ["quotbal", 400],
  ["ltgtruri", 400],
  ["lwsruri", 400],
  ["lwsstart", 400],
  ["trws", 400],
  ["escruri", 400],
  ["regbadct", 400],
  ["badaspec", 400],
  ["baddn", 400],
  ["badvers", 505],
  ["mismatch01", 400],
  ["mismatch02", 501],
  ["insuf", 400],
  ["unkscm", 416],
  ["novelsc", 416],
  ["mcl01", 400],
  ["bext01", 420],
  // Max-Forwards 0 stops a proxy, not an OPTIONS to the endpoint itself.
  ["zeromf", 200],
];

describe("RFC 4475 torture messages", () => {
  it.each(VALID)("%s parses", (name) => {
    expect(() => parseMessage(fixture(name))).not.toThrow();
  });

  it.each(INVALID)("%s is refused with %i", (name, status) => {
    let error: unknown;
    try {
      parseMessage(fixture(name));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SipParseError);
    expect((error as SipParseError).status).toBe(status);
  });

  it("wsinv: folding, compact forms, escaped quotes and whitespace around separators", () => {
    const m = parseMessage(fixture("wsinv")) as SipRequest;
    expect(vias(m).map((v) => [v.transport, v.host, v.params.get("branch")])).toEqual([
      ["UDP", "192.0.2.2", "390skdjuw"],
      ["TCP", "spindle.example.com", "z9hG4bK9ikj8"],
      ["UDP", "192.168.255.111", "z9hG4bK30239"],
    ]);
    expect(toOf(m).params.get("tag")).toBe("1918181833n");
    expect(fromOf(m).displayName).toBe('J Rosenberg \\"');
    expect(fromOf(m).params.get("tag")).toBe("98asjd8");
    expect(m.headers.get("Max-Forwards")).toBe("0068");
    expect(m.headers.get("CSeq")).toBe("0009 INVITE");
    expect(m.headers.get("NewFangledHeader")).toBe("newfangled value continued newfangled value");
    expect(m.headers.get("Subject")).toBe("");
    expect(m.body.length).toBe(150);
  });

  it("dblreq: the octets after the first request of a datagram are dropped", () => {
    const m = parseMessage(fixture("dblreq")) as SipRequest;
    expect(m.method).toBe("REGISTER");
    expect(m.body.length).toBe(0);
  });

  describe("through an endpoint", () => {
    let endpoint: SipEndpoint;
    beforeAll(async () => {
      endpoint = await startEndpoint();
      endpoint.onRequest("INVITE", (tx) => tx.respond(tx.reply(200)));
      endpoint.onRequest("REGISTER", (tx) => tx.respond(tx.reply(200)));
    });
    afterAll(async () => {
      await endpoint.close();
    });

    it.each(ANSWERS)("%s gets %i over TCP", async (name, status) => {
      const ua = await TcpUa.connect(tcpPort(endpoint));
      try {
        ua.send(fixture(name));
        const response = await ua.inbox.next((m) => (m.status ?? 0) >= 200);
        expect(response.status).toBe(status);
        if (status === 400) expect(response.reason).not.toBe("Bad Request");
      } finally {
        ua.close();
      }
    });

    it("drops broken responses and answers the next request", async () => {
      const ua = await UdpUa.open();
      try {
        for (const name of ["scalarlg", "bigcode", "noreason"]) ua.send(fixture(name), udpPort(endpoint));
        ua.send(
          fixture("lwsdisp").toString().replace("funky.example.com;branch", `127.0.0.1:${ua.port};branch`),
          udpPort(endpoint),
        );
        const response = await ua.inbox.next();
        expect(response.status).toBe(200);
        expect(response.header("Call-ID")).toBe("lwsdisp.1234abcd@funky.example.com");
      } finally {
        ua.close();
      }
    });
  });
});
