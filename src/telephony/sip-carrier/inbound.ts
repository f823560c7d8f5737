/**
 * INVITE at the SIP edge: a new call from a SIP endpoint (softphone, PBX).
 *
 * 1. The Request-URI names the dialled user and, by its host, the domain:
 *    `sip:<user>@<sipDomainId>.<SIP base domain>`; any other host is a call
 *    to the service's address, matched by source network to a
 *    domain-optional domain (rule 4). No user part: 404. A `tel:` Request-
 *    URI (RFC 3966) dials its global number (`telNumberOf`; a local number:
 *    404) and names no host: from a trunk it is 3b's call to that number;
 *    otherwise the domain is the one the From's host names (the caller's
 *    AOR), authorized as a `sip:` INVITE to it (step 2, its cidrBlocks), or
 *    none (an unnamed call): no open relay.
 * 2. A named, live domain with SIP users challenges the INVITE (401 with
 *    WWW-Authenticate, SHA-256 and MD5, the domain's FQDN as the realm; the
 *    same nonces as REGISTER, ../sip-edge/digest-realms.ts) until it carries
 *    the credentials of one of its enabled users; wrong ones are challenged
 *    again. Unnamed calls are not challenged (their domain is not known
 *    before resolution). An authenticated INVITE whose From names another
 *    of the domain's users is refused 403 (`Forbidden (From Is Another
 *    User)`, `impersonates`), as REGISTER refuses another's
 *    address-of-record.
 * 3. A PSTN_TRUNK domain (named, or the domain-optional one the source
 *    address matches): with no carrier trunk enabled, 503 (`Service
 *    Unavailable (No Carrier Trunk)`, no Retry-After: the operator must
 *    enable one); otherwise the call goes on (step 5) and the engine dials
 *    the number through the trunks and bridges the two legs (plan
 *    `bridge`, src/voice/calls/incoming.ts).
 * 3b. From a carrier trunk (./trunk-inbound.ts): an INVITE not to a named
 *    domain whose source address is in an enabled trunk's inbound networks
 *    is a call from the PSTN to a number: no digest (the network is the
 *    authentication); the number is the Request-URI's user part (`+61…`, or
 *    digits without `+` taken as E.164 digits), or the To header's when the
 *    Request-URI's is not held by a phone number instance and the To's is
 *    (`trunkDialled`: carriers that put the number in To); it rings the number's
 *    incomingCallHandlerUris. Not held by a project: 404
 *    (NUMBER_NOT_IN_SERVICE). A source in no trunk's networks goes on as
 *    any unnamed call (rule 4 of the domains, refused when no domain-
 *    optional domain takes it): no open relay.
 * 4. The SDP offer (src/sip/sdp.ts): none, unusable or no codec in common
 *    (PCMU, PCMA) → 488. An RTP socket is opened (none free → 503).
 * 5. The INVITE is held by the SipCarrier under its Call-ID and the call
 *    goes to IncomingCalls (src/voice/calls/incoming.ts) as a SIP domain
 *    call with the real source address, the authenticated user and
 *    `sipCallId` = Call-ID; the engine takes it from the carrier
 *    (receiveCall: 180 Ringing) and answers it when the handlers need it.
 *    Refusals map to SIP (`sipRefusal`):
 *
 *    | refusal (resolveSipCall / incoming.ts)                | SIP |
 *    | ----------------------------------------------------- | --- |
 *    | DOMAIN_NOT_FOUND, NO_MATCHING_DOMAIN, DOMAIN_DELETED  | 404 |
 *    | INVALID_ARGUMENT (the dialled user is not a number…)  | 404 |
 *    | SOURCE_IP_NOT_ALLOWED, INVALID_SOURCE_IP,             | 403 |
 *    | DOMAIN_UNUSABLE, DOMAIN_NAME_REQUIRED,                |     |
 *    | AUTHENTICATION_REQUIRED, TERMINATION_DISABLED         |     |
 *    | NUMBER_NOT_IN_SERVICE, NUMBER_NOT_VOICE_CAPABLE       | 404 |
 *    | AMBIGUOUS_DOMAIN, NO_HANDLER                          | 480 |
 *    | CHANNEL_LIMIT_REACHED                                 | 486 |
 *    | the database unavailable, the engine not taking calls | 503 (Retry-After: 5) |
 *    | anything else                                         | 500 |
 *
 *    The reason phrase carries the refusal's code, e.g. `Forbidden
 *    (SOURCE_IP_NOT_ALLOWED)`. Every refusal is logged with its source and
 *    counted (`switchboard_sip_refused_total`).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import type { Logger } from "../../log.js";
import type { NumberDirectory } from "../../messaging/messages/incoming.js";
import { RtpBindError } from "../../rtp/ports.js";
import type { RequestHandler } from "../../sip/endpoint.js";
import type { SipGuard } from "../../sip/guard.js";
import { callIdOf, fromOf, type SipRequest, toOf } from "../../sip/message.js";
import { negotiate, parseAudio, SdpError } from "../../sip/sdp.js";
import type { ServerTransaction } from "../../sip/transaction.js";
import type { Peer } from "../../sip/transport.js";
import { formatUri } from "../../sip/uri.js";
import type { IncomingCall } from "../../voice/calls/incoming.js";
import type { SipCallRequest, SipCallResolution } from "../../voice/sip-domains/call-resolution.js";
import type { SipDomainsRepository } from "../../voice/sip-domains/repository.js";
import type { TrunkRouting } from "../../voice/sip-trunks/routing.js";
import type { SipUsersDomain } from "../../voice/sip-users/domain.js";
import type { DigestRealms } from "../sip-edge/digest-realms.js";
import { domainIdOf, guessing } from "../sip-edge/register.js";
import type { SipCarrier } from "./carrier.js";

export interface InviteDeps {
  carrier: SipCarrier;
  incoming: { receive(call: IncomingCall): Promise<unknown> };
  domains: Pick<SipDomainsRepository, "findById">;
  /** Resolves an unnamed call's domain (SipDomainsDomain.resolveSipCall), to refuse PSTN_TRUNK ones early. */
  resolve?: (call: SipCallRequest) => Promise<SipCallResolution>;
  users: Pick<SipUsersDomain, "credentials" | "hasUsers">;
  /** Told of failed and good digest answers, per source address (src/sip/guard.ts). */
  guard?: Pick<SipGuard, "authFailed" | "authSucceeded">;
  digests: DigestRealms;
  baseDomain: string;
  log: Logger;
  refused?: (reason: string) => void;
  /** The enabled carrier trunks (src/voice/sip-trunks/routing.ts); absent: none. */
  trunks?: Pick<TrunkRouting, "any" | "trunkOfSource">;
  /** The phone number instances (a trunk's INVITE falls back to its To number when the Request-URI's is not held); absent: no fallback. */
  numbers?: Pick<NumberDirectory, "findByNumber">;
  /** Whether a refusal of `why` from `address` is worth a log line (src/sip/guard-log.ts); absent: always. */
  logFirst?: (address: string, why: string) => boolean;
}

const STATUS_OF_CODE: Record<string, [number, string]> = {
  DOMAIN_NOT_FOUND: [404, "Not Found"],
  NO_MATCHING_DOMAIN: [404, "Not Found"],
  DOMAIN_DELETED: [404, "Not Found"],
  SOURCE_IP_NOT_ALLOWED: [403, "Forbidden"],
  INVALID_SOURCE_IP: [403, "Forbidden"],
  DOMAIN_UNUSABLE: [403, "Forbidden"],
  DOMAIN_NAME_REQUIRED: [403, "Forbidden"],
  AUTHENTICATION_REQUIRED: [403, "Forbidden"],
  TERMINATION_DISABLED: [403, "Forbidden"],
  AMBIGUOUS_DOMAIN: [480, "Temporarily Unavailable"],
  NUMBER_NOT_IN_SERVICE: [404, "Not Found"],
  NUMBER_NOT_VOICE_CAPABLE: [404, "Not Found"],
  NO_HANDLER: [480, "Temporarily Unavailable"],
  CHANNEL_LIMIT_REACHED: [486, "Busy Here"],
};

/** The SIP answer to an error of IncomingCalls.receive: status, reason phrase and the code counted. */
export function sipRefusal(err: unknown): { status: number; reason: string; code: string } {
  if (err instanceof ConnectError) {
    const code = err.findDetails(ErrorInfoSchema)[0]?.reason ?? "";
    const mapped = STATUS_OF_CODE[code];
    if (mapped !== undefined) return { status: mapped[0], reason: `${mapped[1]} (${code})`, code };
    if (err.code === Code.InvalidArgument)
      return { status: 404, reason: "Not Found (INVALID_ARGUMENT)", code: "INVALID_ARGUMENT" };
    if (err.code === Code.Unavailable)
      return { status: 503, reason: "Service Unavailable", code: "UNAVAILABLE" };
  }
  return { status: 500, reason: "Server Internal Error", code: "INTERNAL" };
}

export function inviteHandler(deps: InviteDeps): RequestHandler {
  const refuse = (
    tx: ServerTransaction,
    source: Peer,
    status: number,
    reason: string,
    why: string,
    headers: Array<[string, string]> = [],
  ) => {
    deps.refused?.(`invite-${why}`);
    if (deps.logFirst?.(source.address, `invite-${why}`) !== false) {
      deps.log.info(
        { source: `${source.transport} ${source.address}:${source.port}`, status, why },
        "SIP INVITE refused",
      );
    }
    tx.respond(tx.reply(status, reason.replace(/[\r\n]/g, " "), headers));
  };

  const handle = async (tx: ServerTransaction, source: Peer): Promise<void> => {
    const request = tx.request;
    const callId = callIdOf(request);
    if (deps.carrier.holds(callId)) {
      refuse(tx, source, 482, "Loop Detected", "duplicate-call-id");
      return;
    }
    // A tel: Request-URI (RFC 3966) dials its global number and names no host.
    const tel = request.uri.scheme === "tel";
    const dialled = tel
      ? (telNumberOf(request.uri.opaque ?? "") ?? "")
      : request.uri.user === undefined
        ? ""
        : decodeURIComponent(request.uri.user);
    if (dialled === "") {
      if (tel) refuse(tx, source, 404, "Not Found (Not A Global Number)", "tel-not-global");
      else refuse(tx, source, 404, "Not Found (No User In Request-URI)", "no-user");
      return;
    }
    let host = request.uri.host;
    let sipDomainId = tel ? undefined : domainIdOf(host, deps.baseDomain);
    let username = "";
    let pstnTrunk = false;
    let trunkCall: { number: string; caller: string } | undefined;
    if (sipDomainId === undefined && deps.trunks !== undefined) {
      const trunk = await deps.trunks.trunkOfSource(source.address);
      if (trunk !== undefined) {
        const number = await trunkDialled(request, dialled, deps.numbers);
        if (number === undefined) {
          refuse(tx, source, 404, "Not Found (Not A Number)", "trunk-not-a-number");
          return;
        }
        trunkCall = { number, caller: trunkNumberOf(fromOf(request).uri.user ?? "") ?? "" };
      }
    }
    if (tel && trunkCall === undefined) {
      // Not from a trunk: the caller's From names its domain (then authorized as a sip: call to it), else unnamed.
      host = fromOf(request).uri.host;
      sipDomainId = domainIdOf(host, deps.baseDomain);
    }
    if (sipDomainId !== undefined) {
      const row = await deps.domains.findById(sipDomainId);
      if (row !== undefined && row.deleteTime === null) {
        pstnTrunk = row.callTerminationMode === "PSTN_TRUNK";
        if (await deps.users.hasUsers({ projectId: row.projectId, id: row.id })) {
          const realm = `${sipDomainId}.${deps.baseDomain}`;
          const digest = deps.digests.for(realm);
          const result = await digest.verify(
            request.method,
            request.headers.get("Authorization"),
            async (name, alg) => {
              const found = await deps.users.credentials(sipDomainId, name);
              if (found === undefined || found.disabled || found.realm !== realm) return undefined;
              return alg === "MD5" ? found.ha1Md5 : found.ha1Sha256;
            },
          );
          if (!result.ok) {
            if (result.reason !== "missing") deps.refused?.(`invite-digest-${result.reason}`);
            if (guessing(result.reason)) deps.guard?.authFailed(source.address);
            tx.respond(
              tx.reply(
                401,
                "Unauthorized",
                digest.challenge(result.reason === "stale").map((c) => ["WWW-Authenticate", c]),
              ),
            );
            return;
          }
          deps.guard?.authSucceeded(source.address);
          username = result.username;
          const domainId = sipDomainId;
          const isUser = async (name: string) => (await deps.users.credentials(domainId, name)) !== undefined;
          if (await impersonates(fromOf(request).uri.user, username, isUser)) {
            refuse(tx, source, 403, "Forbidden (From Is Another User)", "from-another-user");
            return;
          }
        }
      }
    }
    if (sipDomainId === undefined && trunkCall === undefined && deps.resolve !== undefined) {
      const resolution = await deps.resolve({
        domainName: "",
        sourceIp: source.address,
        authenticatedUser: false,
      });
      pstnTrunk = resolution.allow && resolution.domain.callTerminationMode === "PSTN_TRUNK";
    }
    if (pstnTrunk && !(await deps.trunks?.any())) {
      refuse(tx, source, 503, "Service Unavailable (No Carrier Trunk)", "pstn-trunk-no-trunk");
      return;
    }
    const offer = request.body.toString("utf8");
    try {
      if (offer.trim() === "") throw new SdpError("an INVITE without an SDP offer is not supported");
      negotiate(parseAudio(offer));
    } catch (err) {
      if (!(err instanceof SdpError)) throw err;
      refuse(tx, source, 488, `Not Acceptable Here (${err.message})`, "sdp");
      return;
    }
    let session: Awaited<ReturnType<SipCarrier["openSession"]>>;
    try {
      session = await deps.carrier.openSession();
    } catch (err) {
      if (!(err instanceof RtpBindError)) throw err;
      deps.log.warn({ err }, "no RTP port for an incoming SIP call");
      refuse(tx, source, 503, "Service Unavailable (No RTP Port)", "no-rtp-port", [["Retry-After", "5"]]);
      return;
    }
    deps.carrier.hold(callId, tx, source, offer, session);
    const from = fromOf(request);
    const isPrivate =
      privacyAsked(request.headers.get("Privacy")) || from.uri.user?.toLowerCase() === "anonymous";
    try {
      await deps.incoming.receive(
        trunkCall !== undefined
          ? {
              to: trunkCall.number,
              from: isPrivate ? "" : trunkCall.caller,
              // A caller ID that is not a number is withheld (IncomingCalls takes numbers only).
              isPrivate: isPrivate || trunkCall.caller === "",
              sipDomain: "",
              sourceIp: "",
              user: "",
              sipCallId: callId,
            }
          : {
              to: dialled,
              from: isPrivate ? "" : formatUri({ ...from.uri, params: new Map(), headers: undefined }),
              isPrivate,
              sipDomain: sipDomainId === undefined ? "" : host,
              sourceIp: source.address,
              user: username,
              sipCallId: callId,
            },
      );
    } catch (err) {
      deps.carrier.release(callId);
      const refusal = sipRefusal(err);
      if (refusal.status >= 500) deps.log.error({ err }, "incoming SIP call failed");
      refuse(
        tx,
        source,
        refusal.status,
        refusal.reason,
        refusal.code.toLowerCase(),
        refusal.status === 503 ? [["Retry-After", "5"]] : [],
      );
      return;
    }
    // The engine takes the call synchronously when it starts it; still held: it is not taking calls.
    if (deps.carrier.release(callId) !== undefined) {
      refuse(tx, source, 503, "Service Unavailable (Not Taking Calls)", "engine-stopped", [
        ["Retry-After", "5"],
      ]);
    }
  };

  return (tx, source) => {
    handle(tx, source).catch((err: unknown) => {
      deps.log.error({ err }, "SIP INVITE failed");
      deps.carrier.release(callIdOf(tx.request));
      tx.respond(tx.reply(500, "Server Internal Error"));
    });
  };
}

/**
 * Whether an INVITE authenticated as `username` names another user of its
 * domain as its caller (its From's user part, percent-encoded; `isUser`
 * tells whether a name is one of the domain's users): refused, as REGISTER
 * refuses another's address-of-record (../sip-edge/register.ts), since the
 * domain's endpoints know each other by their users' names. Any other name
 * (a PBX registered as one user presenting its extensions, a number,
 * `anonymous`) is the caller's own claim, as an unauthenticated caller's is:
 * a number reaches the PSTN only when the project holds it (the engine's
 * caller ID check). User parts are compared exactly (RFC 3261 19.1.4).
 */
export async function impersonates(
  fromUser: string | undefined,
  username: string,
  isUser: (name: string) => Promise<boolean>,
): Promise<boolean> {
  if (fromUser === undefined) return false;
  let user: string;
  try {
    user = decodeURIComponent(fromUser);
  } catch {
    return false;
  }
  return user !== username && (await isUser(user));
}

/**
 * Whether a Privacy header (RFC 3323, RFC 3325) asks for the caller to be
 * withheld: one of its values (`;`-separated, case-insensitive) is `id`
 * (RFC 3325) or `user` (RFC 3323's user-level privacy). `none`, `header`,
 * `session` and `critical` alone withhold nothing.
 */
export function privacyAsked(header: string | undefined): boolean {
  if (header === undefined) return false;
  return header
    .split(/[;,]/)
    .map((v) => v.trim().toLowerCase())
    .some((v) => v === "id" || v === "user");
}

/**
 * The E.164 number a trunk's INVITE names: `+` and 2-15 digits, or the
 * same digits without `+` (trunks that send international digits bare);
 * visual separators (`-`, `.`, spaces, parentheses) dropped. Undefined
 * otherwise (national formats, `00` prefixes: a trunk must send E.164).
 */
export function trunkNumberOf(user: string): string | undefined {
  let text: string;
  try {
    text = decodeURIComponent(user);
  } catch {
    return undefined;
  }
  text = text.split(";")[0]!.replace(/[-.()\s]/g, "");
  const m = /^\+?([1-9][0-9]{1,14})$/.exec(text);
  return m === null ? undefined : `+${m[1]}`;
}

/**
 * The global number of a `tel:` URI's opaque part (`+61491570156`,
 * `+61-491-570-156;phone-context=…`; parameters dropped, visual separators
 * removed); undefined for a local number (no `+`) or anything else.
 */
export function telNumberOf(opaque: string): string | undefined {
  const number = opaque.split(";")[0]!;
  return number.startsWith("+") ? trunkNumberOf(number) : undefined;
}

/**
 * The number a trunk's INVITE calls: the Request-URI's; when that is not a
 * number held by a phone number instance and the To header's user is (a
 * carrier that puts the number in To and a fixed value in the
 * Request-URI), the To's. Undefined when neither is a number.
 */
async function trunkDialled(
  request: SipRequest,
  dialled: string,
  numbers: Pick<NumberDirectory, "findByNumber"> | undefined,
): Promise<string | undefined> {
  const number = trunkNumberOf(dialled);
  if (numbers === undefined || (number !== undefined && (await numbers.findByNumber(number)) !== undefined))
    return number;
  const to = toOf(request).uri;
  const toNumber = to.scheme === "tel" ? telNumberOf(to.opaque ?? "") : trunkNumberOf(to.user ?? "");
  if (toNumber === undefined || toNumber === number) return number;
  if ((await numbers.findByNumber(toNumber)) !== undefined) return toNumber;
  return number ?? toNumber;
}
