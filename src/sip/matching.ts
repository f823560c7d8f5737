/**
 * Transaction matching (RFC 3261 §17.1.3, §17.2.3): keys under which
 * transactions are stored and incoming messages looked up. A branch starting
 * with the magic cookie identifies a server transaction with the sent-by and
 * method (ACK and CANCEL look for the INVITE); other branches fall back to
 * RFC 2543 matching on Request-URI, From tag, Call-ID, CSeq number and Via.
 * Responses match client transactions by branch and CSeq method.
 */
import { callIdOf, cseqOf, fromOf, type SipRequest, type SipResponse, tagOf, topVia } from "./message.js";
import { formatUri, MAGIC_COOKIE } from "./uri.js";

/** The key of the server transaction `request` belongs to; ACK and `asMethod` (CANCEL -> INVITE) map to INVITE. */
export function serverKey(request: SipRequest, asMethod?: string): string {
  const via = topVia(request);
  const method = asMethod ?? (request.method === "ACK" ? "INVITE" : request.method);
  const branch = via.params.get("branch");
  if (typeof branch === "string" && branch.startsWith(MAGIC_COOKIE) && branch.length > MAGIC_COOKIE.length) {
    return `${branch}|${via.host}:${via.port ?? ""}|${method}`;
  }
  const topViaText = request.headers.get("Via") ?? "";
  return `2543|${formatUri(request.uri)}|${tagOf(fromOf(request)) ?? ""}|${callIdOf(request)}|${cseqOf(request).seq}|${topViaText}|${method}`;
}

/** The key of the client transaction a response belongs to. */
export function responseKey(response: SipResponse): string {
  return `${topVia(response).params.get("branch") ?? ""}|${cseqOf(response).method}`;
}

/** The key a client transaction is stored under (its request's branch and method). */
export function clientKey(request: SipRequest): string {
  return `${topVia(request).params.get("branch") ?? ""}|${request.method}`;
}
