/**
 * A REGISTER query (RFC 3261 §10.2.3: no Contact) sent by a test UA on a raw
 * UDP socket, answering the digest challenge itself (MD5, qop=auth, computed
 * here from RFC 2617's formulas, not with the service's code): the contacts
 * the registrar that answers holds for the user.
 */
import { createHash, randomBytes } from "node:crypto";
import { UdpUa } from "../../sip/ua.js";

const md5 = (s: string) => createHash("md5").update(s).digest("hex");

/** The digest parameters of a WWW-Authenticate value. */
function params(challenge: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of challenge.matchAll(/(\w+)=(?:"([^"]*)"|([^,\s]+))/g))
    out.set(m[1]!.toLowerCase(), m[2] ?? m[3]!);
  return out;
}

/** Sends the query to 127.0.0.1:`port` for `username@fqdn`; resolves with the 200's Contact values. */
export async function queryBindings(
  port: number,
  fqdn: string,
  username: string,
  password: string,
): Promise<string[]> {
  const ua = await UdpUa.open();
  try {
    const callId = `${randomBytes(8).toString("hex")}@interop`;
    const request = (cseq: number, authorization?: string) =>
      [
        `REGISTER sip:${fqdn} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${ua.port};rport;branch=z9hG4bK${randomBytes(6).toString("hex")}`,
        "Max-Forwards: 70",
        `From: <sip:${username}@${fqdn}>;tag=${randomBytes(4).toString("hex")}`,
        `To: <sip:${username}@${fqdn}>`,
        `Call-ID: ${callId}`,
        `CSeq: ${cseq} REGISTER`,
        ...(authorization === undefined ? [] : [`Authorization: ${authorization}`]),
        "Content-Length: 0",
        "",
        "",
      ].join("\n");
    ua.send(request(1), port);
    const challenged = await ua.inbox.next((m) => m.status !== undefined && m.status >= 200);
    const md5Challenge = challenged
      .headers("WWW-Authenticate")
      .find((h) => /algorithm=MD5(?![-\w])/i.test(h) || !/algorithm=/i.test(h));
    if (challenged.status !== 401 || md5Challenge === undefined) {
      throw new Error(`expected a 401 with an MD5 challenge, got:\n${challenged.text}`);
    }
    const p = params(md5Challenge);
    const realm = p.get("realm")!;
    const nonce = p.get("nonce")!;
    const uri = `sip:${fqdn}`;
    const cnonce = randomBytes(8).toString("hex");
    const nc = "00000001";
    const ha1 = md5(`${username}:${realm}:${password}`);
    const ha2 = md5(`REGISTER:${uri}`);
    const response = md5(`${ha1}:${nonce}:${nc}:${cnonce}:auth:${ha2}`);
    const opaque = p.get("opaque");
    ua.send(
      request(
        2,
        `Digest username="${username}", realm="${realm}", nonce="${nonce}", uri="${uri}", ` +
          `response="${response}", algorithm=MD5, qop=auth, nc=${nc}, cnonce="${cnonce}"` +
          (opaque === undefined ? "" : `, opaque="${opaque}"`),
      ),
      port,
    );
    const answer = await ua.inbox.next((m) => m.status !== undefined && m.status >= 200);
    if (answer.status !== 200) throw new Error(`expected 200 to the query, got:\n${answer.text}`);
    return answer.headers("Contact");
  } finally {
    ua.close();
  }
}
