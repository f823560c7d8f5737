/**
 * REGISTER at the SIP edge (RFC 3261 §10.3): a SIP user of a domain binds
 * the contacts it can be reached at. The request's To names the
 * address-of-record, `sip:<username>@<sipDomainId>.<SIP_BASE_DOMAIN>`:
 * - a To host outside the base domain, or a domain that does not exist or
 *   was deleted: 404;
 * - a domain whose `allow_register` is off: 403;
 * - digest authentication (src/sip/digest.ts) against the user's stored
 *   hashes, with the domain's FQDN as the realm: 401 with a challenge (SHA-256
 *   and MD5) until the user answers it, sent statelessly (RFC 3261 §8.2.7:
 *   nothing is kept for the challenge; a retransmission gets a new one); an
 *   expired nonce is challenged again with `stale=true`; a user may register
 *   only its own username (403);
 * - then the registrar's rules (src/voice/sip-registrations/registrar.ts),
 *   whose bindings live in the database so every replica reaches the user:
 *   200 with every live binding and its expiry, 423 with Min-Expires, 400,
 *   403, 404 or 500 with the rule's reason as the reason phrase.
 */
import type { Clock } from "../../clock.js";
import type { Logger } from "../../log.js";
import type { RequestHandler } from "../../sip/endpoint.js";
import type { SipGuard } from "../../sip/guard.js";
import { callIdOf, cseqOf, toOf } from "../../sip/message.js";
import type { ServerTransaction } from "../../sip/transaction.js";
import type { Peer } from "../../sip/transport.js";
import { formatUri, parseNameAddr, splitOutsideQuotes } from "../../sip/uri.js";
import type { SipDomainsRepository } from "../../voice/sip-domains/repository.js";
import type { RegisterContact, Registrar } from "../../voice/sip-registrations/registrar.js";
import type { SipUserCredentials, SipUsersDomain } from "../../voice/sip-users/domain.js";
import { DigestRealms } from "./digest-realms.js";

export interface RegisterDeps {
  domains: Pick<SipDomainsRepository, "findById">;
  users: Pick<SipUsersDomain, "credentials">;
  registrar: Registrar;
  baseDomain: string;
  /** The digest algorithms challenged, preferred first. */
  algorithms: Array<"SHA-256" | "MD5">;
  /** Signs digest nonces: the same on every replica, so a nonce one issued is good at another. */
  nonceKey: Buffer;
  clock: Clock;
  /** This replica, recorded on the bindings it writes. */
  replicaId: string;
  log: Logger;
  /** Digest servers shared with INVITE (./digest-realms.ts); made from the fields above when absent. */
  digests?: DigestRealms;
  /** Counts a refused REGISTER by reason (/metrics). */
  refused?: (reason: string) => void;
  /** Told of failed and good digest answers, per source address (src/sip/guard.ts). */
  guard?: Pick<SipGuard, "authFailed" | "authSucceeded">;
  /** Whether a refusal of `why` from `address` is worth a log line (src/sip/guard-log.ts); absent: always. */
  logFirst?: (address: string, why: string) => boolean;
}

/** The domain id of an FQDN `<id>.<base>`, or undefined outside the base domain. */
export function domainIdOf(host: string, baseDomain: string): string | undefined {
  const suffix = `.${baseDomain.toLowerCase()}`;
  const h = host.toLowerCase();
  if (!h.endsWith(suffix)) return undefined;
  const id = h.slice(0, -suffix.length);
  return /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(id) ? id : undefined;
}

class BadRequest extends Error {}

/** Digest failures that count towards blocking a source (not a first challenge, not a stale nonce). */
export function guessing(reason: string): boolean {
  return reason === "wrong-credentials" || reason === "unknown-user" || reason === "replayed-nonce-count";
}

/** The Contact header values as registrar contacts; `*` alone is the wildcard. */
function contactsOf(values: string[]): { wildcard: boolean; contacts: RegisterContact[] } {
  const parts = values.flatMap((v) => splitOutsideQuotes(v, ",")).map((p) => p.trim());
  const wildcard = parts.includes("*");
  const contacts: RegisterContact[] = [];
  for (const part of parts) {
    if (part === "*") continue;
    let na: ReturnType<typeof parseNameAddr>;
    try {
      na = parseNameAddr(part, "Contact");
    } catch {
      throw new BadRequest("Bad Contact");
    }
    const expires = na.params.get("expires");
    const instance = na.params.get("+sip.instance");
    contacts.push({
      uri: formatUri(na.uri),
      ...(expires === undefined || expires === null ? {} : { expires: Number(expires) }),
      ...(instance === undefined || instance === null ? {} : { instanceId: instance.replace(/^"|"$/g, "") }),
    });
  }
  return { wildcard, contacts };
}

export function registerHandler(deps: RegisterDeps): RequestHandler {
  const realms =
    deps.digests ??
    new DigestRealms({ nonceKey: deps.nonceKey, clock: deps.clock, algorithms: deps.algorithms });
  const digestFor = (realm: string) => realms.for(realm);

  const refuse = (tx: ServerTransaction, source: Peer, status: number, reason: string, why: string) => {
    deps.refused?.(why);
    if (deps.logFirst?.(source.address, why) === false) {
      tx.respond(tx.reply(status, reason));
      return;
    }
    deps.log.info(
      { source: `${source.transport} ${source.address}:${source.port}`, status, why },
      "SIP REGISTER refused",
    );
    tx.respond(tx.reply(status, reason));
  };

  const handle = async (tx: ServerTransaction, source: Peer): Promise<void> => {
    const request = tx.request;
    const to = toOf(request);
    const sipDomainId = domainIdOf(to.uri.host, deps.baseDomain);
    const domain = sipDomainId === undefined ? undefined : await deps.domains.findById(sipDomainId);
    if (sipDomainId === undefined || domain === undefined || domain.deleteTime !== null) {
      refuse(tx, source, 404, "Unknown SIP Domain", "unknown-domain");
      return;
    }
    if (!domain.allowRegister) {
      refuse(tx, source, 403, "Registration Not Allowed On This Domain", "register-not-allowed");
      return;
    }
    const realm = `${sipDomainId}.${deps.baseDomain}`;
    const digest = digestFor(realm);
    let user: SipUserCredentials | undefined;
    const result = await digest.verify(
      request.method,
      request.headers.get("Authorization"),
      async (name, alg) => {
        const found = await deps.users.credentials(sipDomainId, name);
        if (found === undefined || found.disabled || found.realm !== realm) return undefined;
        user = found;
        return alg === "MD5" ? found.ha1Md5 : found.ha1Sha256;
      },
    );
    if (!result.ok) {
      if (result.reason !== "missing") deps.refused?.(`digest-${result.reason}`);
      if (guessing(result.reason)) deps.guard?.authFailed(source.address);
      if (
        (result.reason === "wrong-credentials" || result.reason === "unknown-user") &&
        deps.logFirst?.(source.address, `digest-${result.reason}`) !== false
      ) {
        deps.log.info(
          { source: `${source.transport} ${source.address}:${source.port}`, why: result.reason, realm },
          "SIP REGISTER refused: digest authentication failed",
        );
      }
      const challenge = digest.challenge(result.reason === "stale");
      // Statelessly (RFC 3261 §8.2.7): every phone's every refresh is challenged first, and a
      // retransmission is as well answered by a new challenge as by this one kept for 32 s.
      tx.respondStateless(
        tx.reply(
          401,
          "Unauthorized",
          challenge.map((c) => ["WWW-Authenticate", c]),
        ),
      );
      return;
    }
    deps.guard?.authSucceeded(source.address);
    if (
      user === undefined ||
      to.uri.user === undefined ||
      decodeURIComponent(to.uri.user) !== user.username
    ) {
      refuse(tx, source, 403, "Forbidden: Not Your Address-Of-Record", "foreign-aor");
      return;
    }
    let parsed: { wildcard: boolean; contacts: RegisterContact[] };
    try {
      parsed = contactsOf(request.headers.getAll("Contact"));
    } catch (err) {
      if (err instanceof BadRequest) {
        refuse(tx, source, 400, err.message, "bad-contact");
        return;
      }
      throw err;
    }
    const expiresHeader = request.headers.get("Expires");
    const outcome = await deps.registrar.register({
      sipDomainId,
      userId: user.userId,
      callId: callIdOf(request),
      cseq: cseqOf(request).seq,
      wildcard: parsed.wildcard,
      contacts: parsed.contacts,
      expires: expiresHeader === undefined ? undefined : Number(expiresHeader.trim()),
      sourceAddress: `${source.address}:${source.port}`,
      sourceTransport: source.transport,
      replicaId: deps.replicaId,
      userAgent: request.headers.get("User-Agent") ?? "",
    });
    if (outcome.status === 200) {
      const headers: Array<[string, string]> = outcome.bindings.map((b) => [
        "Contact",
        `<${b.contactUri}>;expires=${b.expiresIn}`,
      ]);
      headers.push(["Date", deps.clock.now().toUTCString()]);
      tx.respond(tx.reply(200, "OK", headers));
      return;
    }
    if (outcome.status === 423) {
      tx.respond(tx.reply(423, "Interval Too Brief", [["Min-Expires", String(outcome.minExpires)]]));
      return;
    }
    refuse(tx, source, outcome.status, outcome.message.replace(/[\r\n]/g, " "), outcome.reason);
  };

  return (tx, source) => {
    handle(tx, source).catch((err: unknown) => {
      deps.log.error({ err }, "SIP REGISTER failed");
      tx.respond(tx.reply(500, "Server Internal Error"));
    });
  };
}
