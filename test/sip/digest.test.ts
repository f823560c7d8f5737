/**
 * Digest authentication (RFC 2617, RFC 7616, RFC 8760): the published test
 * vectors, the server's nonces (expiry -> stale, replayed nonce-counts,
 * forged nonces), both algorithms, and a REGISTER challenged over UDP and
 * answered by a test UA that computes its digest with node:crypto itself.
 */
import { createHash, randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import {
  answerChallenge,
  chooseChallenge,
  type DigestAlgorithm,
  DigestServer,
  digestHa1,
  digestResponse,
  parseDigestParams,
} from "../../src/sip/digest.js";
import { TestClock } from "../support/clock.js";
import { startEndpoint, UdpUa, udpPort } from "./ua.js";

describe("digest test vectors", () => {
  it("RFC 2617 §3.5 (MD5, qop=auth)", () => {
    const ha1 = digestHa1("MD5", "Mufasa", "testrealm@host.com", "Circle Of Life");
    const response = digestResponse({
      algorithm: "MD5",
      ha1,
      nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093",
      nc: "00000001",
      cnonce: "0a4f113b",
      qop: "auth",
      method: "GET",
      uri: "/dir/index.html",
    });
    expect(response).toBe("6629fae49393a05397450978507c4ef1");
  });

  it("RFC 7616 §3.9.1 (SHA-256 and MD5), through the client's answer", () => {
    const challenge = parseDigestParams(
      'Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=SHA-256, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"',
    )!;
    const cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ";
    const creds = { username: "Mufasa", password: "Circle of Life" };
    const sha = parseDigestParams(
      answerChallenge(challenge, creds, { method: "GET", uri: "/dir/index.html" }, 1, cnonce),
    )!;
    expect(sha.get("response")).toBe("753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1");
    expect(sha.get("opaque")).toBe("FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS");
    expect([sha.get("qop"), sha.get("nc"), sha.get("algorithm")]).toEqual(["auth", "00000001", "SHA-256"]);
    challenge.set("algorithm", "MD5");
    const md5 = parseDigestParams(
      answerChallenge(challenge, creds, { method: "GET", uri: "/dir/index.html" }, 1, cnonce),
    )!;
    expect(md5.get("response")).toBe("8ca523f5e9506fed4657c9700eebdbec");
  });

  it("chooses SHA-256 over MD5 among challenges", () => {
    const chosen = chooseChallenge([
      'Digest realm="r", nonce="n", algorithm=MD5',
      'Digest realm="r", nonce="n", algorithm=SHA-256',
    ]);
    expect(chosen?.get("algorithm")).toBe("SHA-256");
    expect(chooseChallenge(["Basic realm=x"])).toBeUndefined();
  });
});

describe("DigestServer", () => {
  const realm = "acme.sip.example";
  const password = "correct horse";
  const stored = (algorithm: DigestAlgorithm) => digestHa1(algorithm, "alice", realm, password);
  const lookup = (username: string, algorithm: DigestAlgorithm) =>
    username === "alice" ? stored(algorithm) : undefined;

  function server(clock = new TestClock()) {
    return {
      clock,
      digest: new DigestServer({ realm, secret: randomBytes(32), clock, nonceTtlSeconds: 60 }),
    };
  }

  function answer(challenges: string[], algorithm: DigestAlgorithm, pass = password, nc = 1, user = "alice") {
    const c = chooseChallenge(challenges.filter((v) => v.includes(`algorithm=${algorithm}`)))!;
    return answerChallenge(
      c,
      { username: user, password: pass },
      { method: "REGISTER", uri: "sip:acme.sip.example" },
      nc,
    );
  }

  it("challenges with SHA-256 then MD5, qop=auth, and accepts either answer", async () => {
    const { digest } = server();
    const challenges = digest.challenge();
    expect(challenges).toHaveLength(2);
    expect(challenges[0]).toMatch(
      /^Digest realm="acme.sip.example", nonce="[^"]+", algorithm=SHA-256, qop="auth"$/,
    );
    expect(challenges[1]).toContain("algorithm=MD5");
    for (const algorithm of ["SHA-256", "MD5"] as const) {
      expect(await digest.verify("REGISTER", answer(digest.challenge(), algorithm), lookup)).toEqual({
        ok: true,
        username: "alice",
        algorithm,
      });
    }
  });

  it("refuses a wrong password, an unknown user, a missing or malformed header", async () => {
    const { digest } = server();
    expect(
      await digest.verify("REGISTER", answer(digest.challenge(), "SHA-256", "wrong"), lookup),
    ).toMatchObject({
      ok: false,
      reason: "wrong-credentials",
    });
    expect(await digest.verify("REGISTER", answer(digest.challenge(), "MD5", "wrong"), lookup)).toMatchObject(
      {
        reason: "wrong-credentials",
      },
    );
    expect(
      await digest.verify("REGISTER", answer(digest.challenge(), "MD5", password, 1, "mallory"), lookup),
    ).toMatchObject({
      reason: "unknown-user",
    });
    expect(await digest.verify("REGISTER", undefined, lookup)).toMatchObject({ reason: "missing" });
    expect(await digest.verify("REGISTER", 'Digest username="alice"', lookup)).toMatchObject({
      reason: "malformed",
    });
    // The answer is bound to the method.
    expect(await digest.verify("INVITE", answer(digest.challenge(), "MD5"), lookup)).toMatchObject({
      reason: "wrong-credentials",
    });
  });

  it("refuses a nonce it did not sign", async () => {
    const { digest } = server();
    const forged = digest
      .challenge()[0]!
      .replace(/nonce="([^"]+)"/, (_m, n: string) => `nonce="${n.slice(0, -2)}xx"`);
    expect(await digest.verify("REGISTER", answer([forged], "SHA-256"), lookup)).toMatchObject({
      reason: "bad-nonce",
    });
  });

  it("answers an expired nonce with stale (only when the credentials are right)", async () => {
    const { digest, clock } = server();
    const challenges = digest.challenge();
    clock.advance(61_000);
    expect(await digest.verify("REGISTER", answer(challenges, "SHA-256"), lookup)).toMatchObject({
      reason: "stale",
    });
    expect(await digest.verify("REGISTER", answer(challenges, "SHA-256", "wrong"), lookup)).toMatchObject({
      reason: "wrong-credentials",
    });
    expect(digest.challenge(true)[0]).toMatch(/, stale=true$/);
  });

  it("refuses a replayed nonce-count and accepts a rising one", async () => {
    const { digest } = server();
    const challenges = digest.challenge();
    expect((await digest.verify("REGISTER", answer(challenges, "MD5", password, 1), lookup)).ok).toBe(true);
    expect(await digest.verify("REGISTER", answer(challenges, "MD5", password, 1), lookup)).toMatchObject({
      reason: "replayed-nonce-count",
    });
    expect((await digest.verify("REGISTER", answer(challenges, "MD5", password, 2), lookup)).ok).toBe(true);
    expect(await digest.verify("REGISTER", answer(challenges, "MD5", password, 2), lookup)).toMatchObject({
      reason: "replayed-nonce-count",
    });
  });
});

describe("digest over SIP", () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("challenges a REGISTER with 401 and accepts the UA's MD5 answer", async () => {
    const realm = "acme.sip.example";
    const digest = new DigestServer({ realm, secret: randomBytes(32), clock: new TestClock(new Date()) });
    const endpoint = await startEndpoint();
    const ua = await UdpUa.open();
    cleanups.push(
      () => endpoint.close(),
      () => ua.close(),
    );
    endpoint.onRequest("REGISTER", (tx) => {
      void digest
        .verify("REGISTER", tx.request.headers.get("Authorization"), (user, algorithm) =>
          user === "bob" ? digestHa1(algorithm, "bob", realm, "s3cret") : undefined,
        )
        .then((result) => {
          if (result.ok) tx.respond(tx.reply(200));
          else
            tx.respond(
              tx.reply(
                401,
                undefined,
                digest.challenge(result.reason === "stale").map((v) => ["WWW-Authenticate", v]),
              ),
            );
        });
    });
    const register = (cseq: number, auth = "") => `REGISTER sip:${realm} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${ua.port};branch=z9hG4bKreg${cseq};rport
Max-Forwards: 70
From: <sip:bob@${realm}>;tag=reg1
To: <sip:bob@${realm}>
Call-ID: reg-1@test
CSeq: ${cseq} REGISTER
Contact: <sip:bob@127.0.0.1:${ua.port}>
${auth}Content-Length: 0

`;
    ua.send(register(1), udpPort(endpoint));
    const challenge = await ua.inbox.next();
    expect(challenge.status).toBe(401);
    const md5 = challenge.headers("WWW-Authenticate").find((v) => v.includes("algorithm=MD5"))!;
    const nonce = /nonce="([^"]+)"/.exec(md5)![1]!;
    const h = (s: string) => createHash("md5").update(s).digest("hex");
    const uri = `sip:${realm}`;
    const response = h(`${h(`bob:${realm}:s3cret`)}:${nonce}:00000001:abc123:auth:${h(`REGISTER:${uri}`)}`);
    const auth = `Authorization: Digest username="bob", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", algorithm=MD5, cnonce="abc123", qop=auth, nc=00000001\n`;
    ua.send(register(2, auth), udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(200);
    ua.send(register(3, auth), udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(401);
  });
});
