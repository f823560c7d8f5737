/**
 * The client side of digest authentication on SIP requests (RFC 3261
 * §22.2-22.3): a request refused 401/407 is sent again with the answer to
 * its WWW-Authenticate / Proxy-Authenticate challenge (SHA-256 preferred),
 * a new CSeq and, once the endpoint sends it, a new branch. For outbound
 * trunks and any UAC that holds credentials.
 */
import { answerChallenge, chooseChallenge } from "./digest.js";
import { cseqOf, type SipRequest, type SipResponse } from "./message.js";
import { formatUri } from "./uri.js";

export interface Credentials {
  username: string;
  password: string;
}

/**
 * `request` again with credentials for `response`'s challenge, or undefined
 * when there is nothing to answer (not 401/407, no digest challenge).
 */
export function authorize(
  request: SipRequest,
  response: SipResponse,
  credentials: Credentials,
): SipRequest | undefined {
  const proxy = response.status === 407;
  if (response.status !== 401 && !proxy) return undefined;
  const challenge = chooseChallenge(
    response.headers.getAll(proxy ? "Proxy-Authenticate" : "WWW-Authenticate"),
  );
  if (challenge === undefined) return undefined;
  const headers = request.headers.clone();
  const [, ...rest] = headers.getAll("Via");
  headers.delete("Via");
  for (const via of rest) headers.add("Via", via);
  const { seq, method } = cseqOf(request);
  headers.set("CSeq", `${seq + 1} ${method}`);
  const name = proxy ? "Proxy-Authorization" : "Authorization";
  headers.set(
    name,
    answerChallenge(challenge, credentials, { method: request.method, uri: formatUri(request.uri) }),
  );
  return { ...request, headers };
}
