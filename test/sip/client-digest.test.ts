/**
 * The UAC side of digest (src/sip/client-digest.ts): the examples of
 * RFC 2617 §3.5 and RFC 7616 §3.9.1 (MD5 and SHA-256) give their published
 * responses; against the server side (DigestServer) its answers are
 * accepted, the nonce-count rises on every request answered with one nonce
 * (so none is refused as replayed), a stale nonce is answered with the new
 * one, a wrong password is refused; 407 gets Proxy-Authorization; what it
 * cannot answer gets nothing.
 */
import { describe, expect, it } from "vitest";
import { DigestClient } from "../../src/sip/client-digest.js";
import { DigestServer, digestHa1, parseDigestParams } from "../../src/sip/digest.js";
import { TestClock } from "../support/clock.js";

function response(status: number, name: string, values: string[]) {
  return {
    status,
    headers: { getAll: (n: string) => (n.toLowerCase() === name.toLowerCase() ? values : []) },
  };
}

describe("DigestClient against the RFCs' examples", () => {
  it("RFC 2617 §3.5 (MD5, qop=auth, opaque)", () => {
    const client = new DigestClient({ username: "Mufasa", password: "Circle Of Life" }, () => "0a4f113b");
    const [header] = client.answer(
      response(401, "WWW-Authenticate", [
        'Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"',
      ]),
      { method: "GET", uri: "/dir/index.html" },
    );
    expect(header![0]).toBe("Authorization");
    const p = parseDigestParams(header![1])!;
    expect(Object.fromEntries(p)).toEqual({
      username: "Mufasa",
      realm: "testrealm@host.com",
      nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093",
      uri: "/dir/index.html",
      response: "6629fae49393a05397450978507c4ef1",
      algorithm: "MD5",
      cnonce: "0a4f113b",
      qop: "auth",
      nc: "00000001",
      opaque: "5ccc069c403ebaf9f0171e9517f40e41",
    });
  });

  it("RFC 7616 §3.9.1 (SHA-256 preferred over MD5 in the same realm; MD5 alone)", () => {
    const cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ";
    const challenge = (algorithm: string) =>
      `Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=${algorithm}, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"`;
    const target = { method: "GET", uri: "/dir/index.html" };
    const credentials = { username: "Mufasa", password: "Circle of Life" };
    const both = new DigestClient(credentials, () => cnonce).answer(
      response(401, "WWW-Authenticate", [challenge("MD5"), challenge("SHA-256")]),
      target,
    );
    expect(both).toHaveLength(1);
    expect(parseDigestParams(both[0]![1])!.get("response")).toBe(
      "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1",
    );
    const md5 = new DigestClient(credentials, () => cnonce).answer(
      response(401, "WWW-Authenticate", [challenge("MD5")]),
      target,
    );
    expect(parseDigestParams(md5[0]![1])!.get("response")).toBe("8ca523f5e9506fed4657c9700eebdbec");
  });
});

describe("DigestClient against DigestServer", () => {
  const clock = new TestClock();
  const realm = "trunk.example.net";
  const ha1s = {
    "SHA-256": digestHa1("SHA-256", "acme", realm, "trunk-pass"),
    MD5: digestHa1("MD5", "acme", realm, "trunk-pass"),
  };
  const server = (algorithms: Array<"SHA-256" | "MD5"> = ["SHA-256", "MD5"]) =>
    new DigestServer({ realm, secret: Buffer.alloc(32, 7), clock, algorithms, nonceTtlSeconds: 300 });
  const lookup = (user: string, algorithm: "SHA-256" | "MD5") =>
    user === "acme" ? ha1s[algorithm] : undefined;
  const target = { method: "INVITE", uri: "sip:+61491570156@trunk.example.net" };

  it("is accepted, and counts up on every request with the same nonce", async () => {
    for (const algorithms of [["SHA-256", "MD5"], ["MD5"]] as const) {
      const s = server([...algorithms]);
      const client = new DigestClient({ username: "acme", password: "trunk-pass" });
      const [header] = client.answer(response(407, "Proxy-Authenticate", s.challenge()), target);
      expect(header![0]).toBe("Proxy-Authorization");
      expect(parseDigestParams(header![1])!.get("algorithm")).toBe(algorithms[0]);
      expect(await s.verify("INVITE", header![1], lookup)).toMatchObject({ ok: true, username: "acme" });
      // The same answer again is a replay; the client's next answer counts up.
      expect(await s.verify("INVITE", header![1], lookup)).toMatchObject({
        ok: false,
        reason: "replayed-nonce-count",
      });
      const [bye] = client.again({ method: "BYE", uri: "sip:+61491570156@trunk.example.net" });
      expect(parseDigestParams(bye![1])!.get("nc")).toBe("00000002");
      expect(await s.verify("BYE", bye![1], lookup)).toMatchObject({ ok: true });
    }
  });

  it("answers a stale challenge with the new nonce, from count 1", async () => {
    const s = server();
    const client = new DigestClient({ username: "acme", password: "trunk-pass" });
    const [first] = client.answer(response(401, "WWW-Authenticate", s.challenge()), target);
    clock.advance(301_000);
    expect(await s.verify("INVITE", first![1], lookup)).toMatchObject({ ok: false, reason: "stale" });
    const [second] = client.answer(response(401, "WWW-Authenticate", s.challenge(true)), target);
    expect(parseDigestParams(second![1])!.get("nc")).toBe("00000001");
    expect(await s.verify("INVITE", second![1], lookup)).toMatchObject({ ok: true });
  });

  it("with the wrong password is refused", async () => {
    const s = server();
    const [header] = new DigestClient({ username: "acme", password: "wrong" }).answer(
      response(401, "WWW-Authenticate", s.challenge()),
      target,
    );
    expect(await s.verify("INVITE", header![1], lookup)).toMatchObject({
      ok: false,
      reason: "wrong-credentials",
    });
  });
});

describe("DigestClient refuses what it cannot answer", () => {
  const client = new DigestClient({ username: "u", password: "p" });
  const target = { method: "INVITE", uri: "sip:x@y" };
  it.each([
    ["a 403", response(403, "WWW-Authenticate", ['Digest realm="r", nonce="n"'])],
    ["a 401 without a challenge", response(401, "WWW-Authenticate", [])],
    ["a 401 with Basic", response(401, "WWW-Authenticate", ['Basic realm="r"'])],
    [
      "SHA-512-256",
      response(401, "WWW-Authenticate", ['Digest realm="r", nonce="n", algorithm=SHA-512-256']),
    ],
    ["MD5-sess", response(401, "WWW-Authenticate", ['Digest realm="r", nonce="n", algorithm=MD5-sess'])],
    ["auth-int only", response(401, "WWW-Authenticate", ['Digest realm="r", nonce="n", qop="auth-int"'])],
    ["no nonce", response(401, "WWW-Authenticate", ['Digest realm="r"'])],
    [
      "a 407's challenge in WWW-Authenticate",
      response(407, "WWW-Authenticate", ['Digest realm="r", nonce="n"']),
    ],
  ])("%s", (_, r) => {
    expect(client.answer(r, target)).toEqual([]);
  });

  it("answers each realm of a forked 407 once, and without qop the RFC 2069 way", () => {
    const headers = client.answer(
      response(407, "Proxy-Authenticate", [
        'Digest realm="a", nonce="n1", algorithm=MD5, qop="auth"',
        'Digest realm="a", nonce="n1", algorithm=SHA-256, qop="auth"',
        'Digest realm="b", nonce="n2"',
      ]),
      target,
    );
    expect(
      headers.map(([n, v]) => [
        n,
        parseDigestParams(v)!.get("realm"),
        parseDigestParams(v)!.get("algorithm"),
      ]),
    ).toEqual([
      ["Proxy-Authorization", "a", "SHA-256"],
      ["Proxy-Authorization", "b", "MD5"],
    ]);
    expect(parseDigestParams(headers[1]![1])!.has("nc")).toBe(false);
  });
});
