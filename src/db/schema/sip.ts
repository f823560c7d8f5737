/**
 * The SIP edge's data: users of SIP domains (digest credentials), the
 * operator's carrier trunks, and REGISTER bindings. Conventions as in
 * `numbering.ts`.
 *
 * - `sip_users`: a domain's users. The password is never stored: only the
 *   digest HA1 hashes (RFC 2617 / RFC 8760) for MD5 and SHA-256 over
 *   `username:realm:password`, and the realm they were computed for (the
 *   domain's FQDN at the time). The username is unique within the domain.
 * - `sip_trunks`: upstream SIP trunks (operator-only, no project). The
 *   password is stored reversibly, because the service answers the trunk's
 *   challenges with it (src/voice/sip-trunks/secret-box.ts).
 * - `sip_registrations`: REGISTER bindings (RFC 3261 section 10), in the
 *   database so that every replica finds them; one row per (domain, user,
 *   contact URI). Rows past `expires_at` are dead and purged.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  foreignKey,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import { timestamptz } from "./columns.js";
import { sipDomains } from "./voice.js";

/** SipTrunk.Transport values as stored (by their proto names). */
export const SIP_TRUNK_TRANSPORTS = ["UDP", "TCP", "TLS"] as const;
export type SipTrunkTransportValue = (typeof SIP_TRUNK_TRANSPORTS)[number];

export const sipUsers = pgTable(
  "sip_users",
  {
    /** The `{sip_domain}` part of the parent's name (global, so it identifies the domain). */
    sipDomainId: text("sip_domain_id")
      .notNull()
      .references(() => sipDomains.id, { onDelete: "cascade" }),
    /** The `{user}` part of the name, chosen by the client; unique within the domain. */
    id: text("id").notNull(),
    projectId: text("project_id").notNull(),
    /** The SIP authentication username (digest `username`, the AOR's user part); unique within the domain. */
    username: text("username").notNull(),
    displayName: text("display_name").notNull().default(""),
    disabled: boolean("disabled").notNull().default(false),
    /** The digest realm the hashes were computed for: the domain's FQDN then. */
    realm: text("realm").notNull(),
    /** Lowercase hex MD5 of `username:realm:password`. */
    ha1Md5: text("ha1_md5").notNull(),
    /** Lowercase hex SHA-256 of `username:realm:password`. */
    ha1Sha256: text("ha1_sha256").notNull(),
    createTime: timestamptz("create_time").notNull(),
    updateTime: timestamptz("update_time").notNull(),
  },
  (t) => [
    primaryKey({ name: "sip_users_pk", columns: [t.sipDomainId, t.id] }),
    uniqueIndex("sip_users_domain_username_key").on(t.sipDomainId, t.username),
    index("sip_users_domain_create_time_idx").on(t.sipDomainId, t.createTime, t.id),
    check("sip_users_ha1_md5_check", sql`${t.ha1Md5} ~ '^[0-9a-f]{32}$'`),
    check("sip_users_ha1_sha256_check", sql`${t.ha1Sha256} ~ '^[0-9a-f]{64}$'`),
  ],
);

export const sipTrunks = pgTable(
  "sip_trunks",
  {
    /** The `{sip_trunk}` part of the name, chosen by the operator. */
    id: text("id").primaryKey(),
    displayName: text("display_name").notNull().default(""),
    /** `host[:port]`: a DNS name, an IPv4 address or a bracketed IPv6 address. */
    address: text("address").notNull(),
    transport: text("transport", { enum: SIP_TRUNK_TRANSPORTS }).notNull(),
    /** Digest username towards the trunk; empty when the trunk does not challenge. */
    username: text("username").notNull().default(""),
    /** The digest password, sealed (secret-box.ts); null when none was given. */
    password: text("password"),
    /** IPv4 CIDR blocks the trunk sends from, in order. */
    inboundNetworks: text("inbound_networks").array().notNull(),
    enabled: boolean("enabled").notNull().default(true),
    /** Lower first; ties by id. */
    priority: integer("priority").notNull().default(0),
    createTime: timestamptz("create_time").notNull(),
    updateTime: timestamptz("update_time").notNull(),
  },
  (t) => [
    index("sip_trunks_create_time_idx").on(t.createTime, t.id),
    check("sip_trunks_transport_check", sql`${t.transport} in ('UDP', 'TCP', 'TLS')`),
    check("sip_trunks_priority_check", sql`${t.priority} between 0 and 65535`),
  ],
);

export const sipRegistrations = pgTable(
  "sip_registrations",
  {
    sipDomainId: text("sip_domain_id").notNull(),
    /** The user's id (`{user}`); bindings go with their user (and so with the domain). */
    userId: text("user_id").notNull(),
    /** The Contact URI bound, as registered (compared as given). */
    contactUri: text("contact_uri").notNull(),
    /** Where the REGISTER came from: `ip:port` as seen by the replica (rport, RFC 3581). */
    sourceAddress: text("source_address").notNull(),
    /** The transport it came over: UDP, TCP or TLS. */
    sourceTransport: text("source_transport").notNull(),
    callId: text("call_id").notNull(),
    cseq: bigint("cseq", { mode: "number" }).notNull(),
    /** The `+sip.instance` of the Contact (RFC 5626), empty when none. */
    instanceId: text("instance_id").notNull().default(""),
    /** The replica that took the REGISTER (and holds the connection, for TCP and TLS). */
    replicaId: text("replica_id").notNull(),
    userAgent: text("user_agent").notNull().default(""),
    expiresAt: timestamptz("expires_at").notNull(),
    createTime: timestamptz("create_time").notNull(),
    updateTime: timestamptz("update_time").notNull(),
  },
  (t) => [
    primaryKey({ name: "sip_registrations_pk", columns: [t.sipDomainId, t.userId, t.contactUri] }),
    foreignKey({
      name: "sip_registrations_user_fk",
      columns: [t.sipDomainId, t.userId],
      foreignColumns: [sipUsers.sipDomainId, sipUsers.id],
    }).onDelete("cascade"),
    index("sip_registrations_expires_at_idx").on(t.expiresAt),
    check("sip_registrations_cseq_check", sql`${t.cseq} between 0 and 4294967295`),
  ],
);

export type SipUserRow = typeof sipUsers.$inferSelect;
export type NewSipUserRow = typeof sipUsers.$inferInsert;
export type SipTrunkRow = typeof sipTrunks.$inferSelect;
export type NewSipTrunkRow = typeof sipTrunks.$inferInsert;
export type SipRegistrationRow = typeof sipRegistrations.$inferSelect;
export type NewSipRegistrationRow = typeof sipRegistrations.$inferInsert;
