/**
 * The registrar's rules (RFC 3261 section 10.3) over REGISTER bindings kept
 * in the database, so that every replica finds every user's contacts. No
 * SIP parsing here: the SIP core parses the request and authenticates the
 * user, then calls `register` with plain values and turns the result into a
 * response (200 with the bindings, 400, 403, 423 with Min-Expires, 500).
 *
 * Rules of `register` (all or nothing, one transaction, under a lock of
 * the user's row so that REGISTERs for one address-of-record from any
 * replica are applied one after the other; a phone's plain refresh of its
 * one binding takes a single statement instead, with the same outcome):
 * - No Contact: a query; the live bindings are returned.
 * - `Contact: *` is valid only alone and with `Expires: 0` (else 400); it
 *   removes every binding of the user.
 * - Each contact's expiry is its `expires` parameter, else the request's
 *   Expires header, else `defaultExpires`. Expiries must be whole numbers
 *   of seconds, 0 to 2^32-1 (else 400). An expiry above 0 and below
 *   `minExpires` refuses the whole request with 423 and `minExpires` (the
 *   Min-Expires header); one above `maxExpires` is shortened to it.
 * - A binding with the contact's URI (compared exactly as given) from the
 *   same Call-ID is changed only by a higher CSeq: an equal or lower one
 *   aborts the whole request (500, `CSEQ_OUT_OF_ORDER`). From another
 *   Call-ID any CSeq goes. Expiry 0 removes the binding, otherwise it is
 *   added or refreshed (source, transport, replica and user agent
 *   replaced). The same check applies to every binding `*` removes.
 * - At most `maxBindings` live bindings per user: more is 403
 *   `TOO_MANY_BINDINGS`, nothing changed.
 * - A disabled user is 403 `USER_DISABLED`; a user that no longer exists
 *   404 `USER_NOT_FOUND`.
 * - Bindings past their expiry are dead: never returned, replaced as if
 *   absent, and deleted by `purgeExpired` (and whenever their user
 *   registers).
 */
import type { Clock } from "../../clock.js";
import type { SipRegistrationRow } from "../../db/schema/index.js";
import type { VoiceStore } from "../sip-domains/repository.js";

export interface RegisterPolicy {
  /** Shortest expiry accepted above 0 (seconds); below it: 423 with this as Min-Expires. */
  minExpires: number;
  /** Longest expiry granted; longer requests are shortened to it. */
  maxExpires: number;
  /** The expiry of a contact with neither an `expires` parameter nor an Expires header. */
  defaultExpires: number;
  /** Live bindings a user may have. */
  maxBindings: number;
}

/** RFC 3261's defaults (3600 s), a minimum of 60 s, and 10 contacts per user. */
export const DEFAULT_REGISTER_POLICY: RegisterPolicy = {
  minExpires: 60,
  maxExpires: 3600,
  defaultExpires: 3600,
  maxBindings: 10,
};

const MAX_DELTA_SECONDS = 4_294_967_295;

export interface RegisterContact {
  /** The Contact URI, as sent. */
  uri: string;
  /** Its `expires` parameter, when present. */
  expires?: number | undefined;
  /** Its `+sip.instance` parameter (RFC 5626), when present. */
  instanceId?: string | undefined;
}

export interface RegisterRequest {
  sipDomainId: string;
  /** The authenticated user's id (`{user}`). */
  userId: string;
  callId: string;
  /** The CSeq number (0 to 2^32-1). */
  cseq: number;
  /** `Contact: *`. */
  wildcard: boolean;
  contacts: RegisterContact[];
  /** The Expires header, when present. */
  expires?: number | undefined;
  /** `ip:port` the request came from (after rport). */
  sourceAddress: string;
  /** UDP, TCP or TLS. */
  sourceTransport: string;
  /** The replica that received it. */
  replicaId: string;
  /** The User-Agent header, or empty. */
  userAgent: string;
}

export interface Binding {
  contactUri: string;
  expiresAt: Date;
  /** Whole seconds left (at least 1), for the response's `expires` parameters. */
  expiresIn: number;
  sourceAddress: string;
  sourceTransport: string;
  callId: string;
  cseq: number;
  instanceId: string;
  replicaId: string;
  userAgent: string;
}

export type RegisterResult =
  | { status: 200; bindings: Binding[] }
  | { status: 423; minExpires: number }
  | {
      status: 400 | 403 | 404 | 500;
      reason:
        | "INVALID_WILDCARD"
        | "INVALID_EXPIRES"
        | "INVALID_CSEQ"
        | "TOO_MANY_BINDINGS"
        | "USER_DISABLED"
        | "USER_NOT_FOUND"
        | "CSEQ_OUT_OF_ORDER";
      message: string;
    };

type Failure = Exclude<RegisterResult, { status: 200 }>;

/** Thrown inside the transaction to roll it back with a result. */
class Refusal extends Error {
  constructor(readonly result: Failure) {
    super(result.status === 423 ? "interval too brief" : result.message);
  }
}

function isDelta(n: number | undefined): boolean {
  return n === undefined || (Number.isInteger(n) && n >= 0 && n <= MAX_DELTA_SECONDS);
}

export function bindingOf(row: SipRegistrationRow, now: Date): Binding {
  return {
    contactUri: row.contactUri,
    expiresAt: row.expiresAt,
    expiresIn: Math.max(1, Math.ceil((row.expiresAt.getTime() - now.getTime()) / 1000)),
    sourceAddress: row.sourceAddress,
    sourceTransport: row.sourceTransport,
    callId: row.callId,
    cseq: row.cseq,
    instanceId: row.instanceId,
    replicaId: row.replicaId,
    userAgent: row.userAgent,
  };
}

export class Registrar {
  constructor(
    private readonly store: VoiceStore,
    private readonly clock: Clock,
    readonly policy: RegisterPolicy = DEFAULT_REGISTER_POLICY,
  ) {}

  /** Applies a REGISTER; see the file comment. */
  async register(req: RegisterRequest): Promise<RegisterResult> {
    const invalid = this.check(req);
    if (invalid !== undefined) return invalid;
    const refreshed = await this.refresh(req);
    if (refreshed !== undefined) return refreshed;
    try {
      return await this.store.transaction(async (s) => {
        const user = await s.sipUsers.lock(req.sipDomainId, req.userId);
        if (user === undefined) {
          throw new Refusal({ status: 404, reason: "USER_NOT_FOUND", message: "no such user" });
        }
        if (user.disabled) {
          throw new Refusal({ status: 403, reason: "USER_DISABLED", message: "the user is disabled" });
        }
        const now = this.clock.now();
        const existing = new Map<string, SipRegistrationRow>();
        for (const row of await s.sipRegistrations.forUser(req.sipDomainId, req.userId)) {
          if (row.expiresAt > now) existing.set(row.contactUri, row);
          else await s.sipRegistrations.delete(row.sipDomainId, row.userId, row.contactUri);
        }
        if (req.wildcard) {
          for (const row of existing.values()) this.checkOrder(row, req);
          await s.sipRegistrations.deleteForUser(req.sipDomainId, req.userId);
          return { status: 200, bindings: [] };
        }
        const live = new Map(existing);
        for (const contact of req.contacts) {
          const current = live.get(contact.uri);
          if (current !== undefined) this.checkOrder(current, req);
          const expires = Math.min(
            contact.expires ?? req.expires ?? this.policy.defaultExpires,
            this.policy.maxExpires,
          );
          if (expires === 0) {
            if (current !== undefined)
              await s.sipRegistrations.delete(req.sipDomainId, req.userId, contact.uri);
            live.delete(contact.uri);
            continue;
          }
          const row = {
            sipDomainId: req.sipDomainId,
            userId: req.userId,
            contactUri: contact.uri,
            sourceAddress: req.sourceAddress,
            sourceTransport: req.sourceTransport,
            callId: req.callId,
            cseq: req.cseq,
            instanceId: contact.instanceId ?? "",
            replicaId: req.replicaId,
            userAgent: req.userAgent,
            expiresAt: new Date(now.getTime() + expires * 1000),
            createTime: current?.createTime ?? now,
            updateTime: now,
          };
          await s.sipRegistrations.upsert(row);
          live.set(contact.uri, row);
        }
        if (live.size > this.policy.maxBindings) {
          throw new Refusal({
            status: 403,
            reason: "TOO_MANY_BINDINGS",
            message: `a user may register at most ${this.policy.maxBindings} contacts`,
          });
        }
        return {
          status: 200,
          bindings: [...live.values()]
            .sort((a, b) => (a.contactUri < b.contactUri ? -1 : a.contactUri > b.contactUri ? 1 : 0))
            .map((r) => bindingOf(r, now)),
        };
      });
    } catch (err) {
      if (err instanceof Refusal) return err.result;
      throw err;
    }
  }

  /** The live bindings of the enabled user `username` of a domain (where to send its calls). */
  async bindings(sipDomainId: string, username: string): Promise<Binding[]> {
    const now = this.clock.now();
    const rows = await this.store.sipRegistrations.liveForUsername(sipDomainId, username, now);
    return rows.map((r) => bindingOf(r, now));
  }

  /**
   * The common case, a phone refreshing its one binding (not yet expired;
   * the same Call-ID with a higher CSeq, or another Call-ID), in one statement without the user's lock
   * (SipRegistrationsRepository.refresh); undefined when it does not apply,
   * and the transaction above decides. The outcome is the one the
   * transaction would give: a refresh adds no binding, so the limit holds.
   */
  private async refresh(req: RegisterRequest): Promise<RegisterResult | undefined> {
    const [contact] = req.contacts;
    if (req.wildcard || contact === undefined || req.contacts.length !== 1) return undefined;
    const expires = Math.min(
      contact.expires ?? req.expires ?? this.policy.defaultExpires,
      this.policy.maxExpires,
    );
    if (expires === 0) return undefined;
    const now = this.clock.now();
    const rows = await this.store.sipRegistrations.refresh({
      sipDomainId: req.sipDomainId,
      userId: req.userId,
      contactUri: contact.uri,
      callId: req.callId,
      cseq: req.cseq,
      sourceAddress: req.sourceAddress,
      sourceTransport: req.sourceTransport,
      instanceId: contact.instanceId ?? "",
      replicaId: req.replicaId,
      userAgent: req.userAgent,
      expiresAt: new Date(now.getTime() + expires * 1000),
      now,
    });
    if (rows === undefined) return undefined;
    return { status: 200, bindings: rows.map((r) => bindingOf(r, now)) };
  }

  /** Deletes the bindings that have expired; how many. */
  purgeExpired(): Promise<number> {
    return this.store.sipRegistrations.purgeExpired(this.clock.now());
  }

  /** The checks that need no database: wildcard form, expiries, CSeq, Min-Expires. */
  private check(req: RegisterRequest): Failure | undefined {
    if (!Number.isInteger(req.cseq) || req.cseq < 0 || req.cseq > MAX_DELTA_SECONDS) {
      return { status: 400, reason: "INVALID_CSEQ", message: "CSeq must be 0 to 2^32-1" };
    }
    if (!isDelta(req.expires) || !req.contacts.every((c) => isDelta(c.expires))) {
      return { status: 400, reason: "INVALID_EXPIRES", message: "expiries must be 0 to 2^32-1 seconds" };
    }
    if (req.wildcard) {
      if (req.contacts.length > 0 || req.expires !== 0) {
        return {
          status: 400,
          reason: "INVALID_WILDCARD",
          message: "Contact: * must be the only contact and come with Expires: 0",
        };
      }
      return undefined;
    }
    for (const contact of req.contacts) {
      const expires = contact.expires ?? req.expires ?? this.policy.defaultExpires;
      if (expires > 0 && expires < this.policy.minExpires) {
        return { status: 423, minExpires: this.policy.minExpires };
      }
    }
    return undefined;
  }

  /** RFC 3261 10.3 step 7: the same Call-ID needs a higher CSeq. */
  private checkOrder(current: SipRegistrationRow, req: RegisterRequest): void {
    if (current.callId === req.callId && req.cseq <= current.cseq) {
      throw new Refusal({
        status: 500,
        reason: "CSEQ_OUT_OF_ORDER",
        message: `CSeq ${req.cseq} is not above ${current.cseq} of the binding's Call-ID`,
      });
    }
  }
}
