/**
 * Users of SIP domains: the digest credentials SIP endpoints authenticate
 * with (issue 27). `SipUsersDomain` holds the rules; service.ts maps protos.
 *
 * Rules (violations are INVALID_ARGUMENT naming the proto field path):
 * - sip_user_id: chosen by the client, `^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`,
 *   unique within the domain (ALREADY_EXISTS, also under concurrent creates).
 * - username: a SIP URI user part without escapes (model.ts), unique within
 *   the domain, case-sensitive (ALREADY_EXISTS `USERNAME_TAKEN` naming it).
 * - password: write-only, 8 to 128 characters, no control characters;
 *   required on create and whenever the username changes. Never stored:
 *   only `HA1` for MD5 and SHA-256 over `username:realm:password` (digest.ts),
 *   with the realm, which is the domain's FQDN `{sip_domain_id}.{SIP_BASE_DOMAIN}`
 *   at the time. Renaming SIP_BASE_DOMAIN invalidates every stored hash
 *   (the `realm` shown no longer matches the FQDN): passwords must be set
 *   again. An update with an empty password keeps the hashes.
 * - The parent domain must exist in the project (NOT_FOUND names it). Users
 *   of a deleted domain can be read but not created, changed or deleted
 *   (FAILED_PRECONDITION `SIP_DOMAIN_DELETED`), as aliases.
 * - Deleting a user removes it and its registrations (DeleteSipUser returns
 *   Empty); lists are newest first.
 * - For the authorization rules of the contract ("users are defined"),
 *   every user counts, disabled ones included: disabling all users of a
 *   domain does not open it to unauthenticated calls.
 */
import { alreadyExists, invalidArgument, notFound } from "../../api/errors.js";
import { recordCreated } from "../../api/idempotency/scope.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import type { Clock } from "../../clock.js";
import { isUniqueViolation } from "../../db/client.js";
import type { SipDomainRow, SipUserRow } from "../../db/schema/index.js";
import type { SipUserDirectory } from "../sip-domains/call-resolution.js";
import type { SipDomainsConfig } from "../sip-domains/config.js";
import { deletedError } from "../sip-domains/domain.js";
import { RESOURCE_TYPE as SIP_DOMAIN_TYPE } from "../sip-domains/model.js";
import type { VoiceStore } from "../sip-domains/repository.js";
import { notifySipUserChange, sipUserChangesOf } from "./credentials-cache.js";
import { type DigestHashes, digestHashes } from "./digest.js";
import {
  type DomainRef,
  domainName,
  RESOURCE_TYPE,
  SIP_USER_ID_PATTERN,
  type SipUser,
  type SipUserRef,
  type SipUserSettings,
  settingsViolations,
  sipUserName,
} from "./model.js";
import { SIP_USER_KEY, SIP_USERNAME_KEY } from "./repository.js";

export interface PageParams {
  pageSize: number;
  pageToken: string;
}

/** What the SIP core needs to check a user's digest response. */
export interface SipUserCredentials extends DigestHashes {
  projectId: string;
  sipDomainId: string;
  userId: string;
  username: string;
  disabled: boolean;
}

export class SipUsersDomain implements SipUserDirectory {
  constructor(
    private readonly store: VoiceStore,
    private readonly clock: Clock,
    private readonly config: Pick<SipDomainsConfig, "baseDomain">,
  ) {}

  /** The digest realm of a domain: its FQDN. */
  realmOf(sipDomainId: string): string {
    return `${sipDomainId}.${this.config.baseDomain}`;
  }

  view(row: SipUserRow): SipUser {
    const ref = { projectId: row.projectId, sipDomainId: row.sipDomainId, id: row.id };
    return {
      ...ref,
      name: sipUserName(ref),
      username: row.username,
      displayName: row.displayName,
      disabled: row.disabled,
      realm: row.realm,
      createTime: row.createTime,
      updateTime: row.updateTime,
    };
  }

  async create(parent: DomainRef, sipUserId: string, input: SipUserSettings): Promise<SipUser> {
    const violations = settingsViolations(input, true);
    if (!SIP_USER_ID_PATTERN.test(sipUserId)) {
      violations.unshift({
        field: "sip_user_id",
        description:
          "must be 1 to 63 lowercase letters, digits or hyphens, starting and ending with a letter or digit",
        reason: sipUserId === "" ? "required" : "string.pattern",
      });
    }
    if (violations.length > 0) throw invalidArgument(violations);
    const ref = { ...parent, id: sipUserId };
    try {
      const row = await this.store.transaction(async (s) => {
        await this.liveDomain(s, parent);
        const now = this.clock.now();
        const inserted = await s.sipUsers.insert({
          sipDomainId: parent.sipDomainId,
          id: sipUserId,
          projectId: parent.projectId,
          username: input.username,
          displayName: input.displayName,
          disabled: input.disabled,
          ...digestHashes(input.username, this.realmOf(parent.sipDomainId), input.password),
          createTime: now,
          updateTime: now,
        });
        // Idempotency-Key (src/api/idempotency/): committed with the user.
        await recordCreated(s.db, sipUserName(ref));
        // The edges' memory of whether the domain has users (credentials-cache.ts) forgets it.
        await notifySipUserChange(s.db, parent.sipDomainId);
        return inserted;
      });
      sipUserChangesOf(this.store.db).changed(parent.sipDomainId);
      return this.view(row);
    } catch (err) {
      throw this.conflict(err, ref, input.username);
    }
  }

  async get(ref: SipUserRef): Promise<SipUser> {
    const row = await this.store.sipUsers.find(ref.projectId, ref.sipDomainId, ref.id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, sipUserName(ref));
    return this.view(row);
  }

  /** The domain's users, newest first (the domain may be deleted). */
  async list(parent: DomainRef, page: PageParams): Promise<PageResult<SipUser>> {
    await this.domain(this.store, parent);
    const query = { method: "ListSipUsers", parent: domainName(parent) };
    const result = await readPage({ ...page, query }, (after, limit) =>
      this.store.sipUsers.list(parent.sipDomainId, after, limit),
    );
    return { items: result.items.map((r) => this.view(r)), nextPageToken: result.nextPageToken };
  }

  /**
   * Updates a user; `plan` computes its new settings from the current user
   * (whose `password` is empty), or undefined for no change.
   */
  async update(ref: SipUserRef, plan: (current: SipUser) => SipUserSettings | undefined): Promise<SipUser> {
    let changed = false;
    try {
      const user = await this.store.transaction(async (s) => {
        await this.liveDomain(s, ref);
        const row = await s.sipUsers.find(ref.projectId, ref.sipDomainId, ref.id, true);
        if (row === undefined) throw notFound(RESOURCE_TYPE, sipUserName(ref));
        const current = this.view(row);
        const changes = plan(current);
        if (changes === undefined) return current;
        const renamed = changes.username !== current.username;
        const violations = settingsViolations(changes, renamed);
        if (violations.length > 0) throw invalidArgument(violations);
        const updated = await s.sipUsers.update(ref.sipDomainId, ref.id, {
          username: changes.username,
          displayName: changes.displayName,
          disabled: changes.disabled,
          ...(changes.password === ""
            ? {}
            : digestHashes(changes.username, this.realmOf(ref.sipDomainId), changes.password)),
          updateTime: this.clock.now(),
        });
        await notifySipUserChange(s.db, ref.sipDomainId);
        changed = true;
        return this.view(updated!);
      });
      // Committed: this process's credential caches forget the domain's users (other replicas: the NOTIFY).
      if (changed) sipUserChangesOf(this.store.db).changed(ref.sipDomainId);
      return user;
    } catch (err) {
      throw this.conflict(err, ref, undefined);
    }
  }

  async delete(ref: SipUserRef): Promise<void> {
    await this.store.transaction(async (s) => {
      await this.liveDomain(s, ref);
      if (!(await s.sipUsers.delete(ref.sipDomainId, ref.id))) {
        throw notFound(RESOURCE_TYPE, sipUserName(ref));
      }
      await notifySipUserChange(s.db, ref.sipDomainId);
    });
    // Committed: this process's credential caches forget the domain's users (other replicas: the NOTIFY).
    sipUserChangesOf(this.store.db).changed(ref.sipDomainId);
  }

  /** SipUserDirectory: whether the domain has users (disabled ones count; see the file comment). */
  hasUsers(domain: { projectId: string; id: string }): Promise<boolean> {
    return this.store.sipUsers.exists(domain.id);
  }

  /** The stored digest credentials of `username` in a domain (by its id), for the SIP core. */
  async credentials(sipDomainId: string, username: string): Promise<SipUserCredentials | undefined> {
    const row = await this.store.sipUsers.credentials(sipDomainId, username);
    if (row === undefined) return undefined;
    return {
      projectId: row.projectId,
      sipDomainId: row.sipDomainId,
      userId: row.id,
      username: row.username,
      disabled: row.disabled,
      realm: row.realm,
      ha1Md5: row.ha1Md5,
      ha1Sha256: row.ha1Sha256,
    };
  }

  private conflict(err: unknown, ref: SipUserRef, username: string | undefined): unknown {
    const name = sipUserName(ref);
    if (isUniqueViolation(err, SIP_USER_KEY)) {
      return alreadyExists(RESOURCE_TYPE, name, `${name} already exists`, { sip_user_id: ref.id });
    }
    if (isUniqueViolation(err, SIP_USERNAME_KEY)) {
      return alreadyExists(
        RESOURCE_TYPE,
        name,
        `another user of ${domainName(ref)} has the username${username === undefined ? "" : ` ${JSON.stringify(username)}`}`,
        { field: "sip_user.username" },
      );
    }
    return err;
  }

  private async domain(s: VoiceStore, ref: DomainRef, lock = false): Promise<SipDomainRow> {
    const row = await s.sipDomains.find(ref.projectId, ref.sipDomainId, lock);
    if (row === undefined) throw notFound(SIP_DOMAIN_TYPE, domainName(ref));
    return row;
  }

  /** The parent domain, locked until the transaction ends; it must not be deleted. */
  private async liveDomain(s: VoiceStore, ref: DomainRef): Promise<SipDomainRow> {
    const row = await this.domain(s, ref, true);
    if (row.deleteTime !== null) throw deletedError(domainName(ref));
    return row;
  }
}
