/**
 * Credentials out of captured SIP messages (src/sip/redact.ts): digest
 * answers keep who and where, lose the response and cnonce; other schemes
 * keep their name only; Authentication-Info loses rspauth; SDES keys are
 * overwritten in place; everything else is byte for byte the same.
 */
import { describe, expect, it } from "vitest";
import { redactAuthorization, redactSipMessage } from "../../src/sip/redact.js";
import { sip } from "./ua.js";

const DIGEST =
  'Digest username="alice", realm="d1.sip.switchboard.local", nonce="abc123", uri="sip:1001@d1.sip.switchboard.local", response="6629fae49393a05397450978507c4ef1", algorithm=MD5, cnonce="0a4f113b", qop=auth, nc=00000001, opaque="5ccc069c"';

function invite(extra: string[], body = ""): Buffer {
  return sip(
    [
      "INVITE sip:1001@d1.sip.switchboard.local SIP/2.0",
      "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK1;rport",
      'From: "Ålice" <sip:alice@d1.sip.switchboard.local>;tag=a',
      "To: <sip:1001@d1.sip.switchboard.local>",
      "Call-ID: redact-1",
      "CSeq: 2 INVITE",
      ...extra,
      `Content-Length: ${Buffer.byteLength(body)}`,
      "",
      body,
    ].join("\n"),
  );
}

describe("redactSipMessage", () => {
  it("keeps a digest answer's username, realm, uri, nonce, algorithm, qop, nc and opaque; replaces response and cnonce", () => {
    const out = redactSipMessage(invite([`Authorization: ${DIGEST}`])).toString("utf8");
    const line = /^Authorization: (.*)\r$/m.exec(out)?.[1];
    expect(line).toBe(
      'Digest username="alice", realm="d1.sip.switchboard.local", nonce="abc123", uri="sip:1001@d1.sip.switchboard.local", response="REDACTED", algorithm=MD5, cnonce="REDACTED", qop=auth, nc=00000001, opaque="5ccc069c"',
    );
    expect(out).not.toContain("6629fae49393a05397450978507c4ef1");
    expect(out).not.toContain("0a4f113b");
  });

  it("redacts Proxy-Authorization in any case, folded lines included, and several of them", () => {
    const out = redactSipMessage(
      invite([
        'proxy-authorization: Digest username="trunk",',
        '  realm="carrier", response="ffff0000ffff0000ffff0000ffff0000",',
        '\tcnonce="c1", nonce="n", uri="sip:x", qop=auth, nc=00000002',
        'Proxy-Authorization: Digest username="other", realm="r2", response="deadbeef"',
      ]),
    ).toString("utf8");
    expect(out).not.toMatch(/ffff0000|deadbeef|"c1"/);
    expect(out).toContain(
      'proxy-authorization: Digest username="trunk", realm="carrier", response="REDACTED", cnonce="REDACTED", nonce="n", uri="sip:x", qop=auth, nc=00000002\r\n',
    );
    expect(out).toContain(
      'Proxy-Authorization: Digest username="other", realm="r2", response="REDACTED"\r\n',
    );
  });

  it("keeps only the scheme of Basic and Bearer credentials, and a parameter list it cannot read is cut", () => {
    expect(redactAuthorization(" Basic YWxpY2U6c2VjcmV0")).toBe("Basic REDACTED");
    expect(redactAuthorization("Bearer eyJhbGciOi")).toBe("Bearer REDACTED");
    expect(redactAuthorization('Digest username="a", response="x" garbage secret')).toBe(
      'Digest username="a", REDACTED',
    );
  });

  it("replaces rspauth and cnonce in Authentication-Info", () => {
    const out = redactSipMessage(
      sip(
        [
          "SIP/2.0 200 OK",
          "Call-ID: redact-2",
          "CSeq: 1 REGISTER",
          'Authentication-Info: qop=auth, rspauth="d3b07384d113edec49eaa6238ad5ff00", cnonce="0a4f113b", nc=00000001',
          "Content-Length: 0",
          "",
          "",
        ].join("\n"),
      ),
    ).toString("utf8");
    expect(out).toContain(
      'Authentication-Info: qop=auth, rspauth="REDACTED", cnonce="REDACTED", nc=00000001\r\n',
    );
  });

  it("overwrites SDES keys with as many X, so Content-Length still holds", () => {
    const key = "WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz";
    const body = `v=0\r\nm=audio 4000 RTP/SAVP 0\r\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:${key}|2^20|1:32\r\n`;
    const before = invite([], body);
    const after = redactSipMessage(before);
    expect(after.length).toBe(before.length);
    expect(after.toString("utf8")).toContain(`inline:${"X".repeat(key.length)}|2^20|1:32\r\n`);
    expect(after.toString("utf8")).not.toContain(key);
  });

  it("leaves a message without credentials as the very same bytes, UTF-8 and all", () => {
    const message = invite(['WWW-Authenticate: Digest realm="d1", nonce="n1", qop="auth"']);
    expect(redactSipMessage(message)).toBe(message);
    const redacted = redactSipMessage(invite([`Authorization: ${DIGEST}`]));
    expect(redacted.toString("utf8")).toContain(
      'From: "Ålice" <sip:alice@d1.sip.switchboard.local>;tag=a\r\n',
    );
  });
});
