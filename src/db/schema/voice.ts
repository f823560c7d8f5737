/**
 * Voice area: SIP domains, the registry of SIP domain ids ever issued, and
 * the aliases of SIP domains. Conventions as in `numbering.ts`.
 *
 * SIP domain ids are global (they are the first label of the domain's FQDN)
 * and never reissued: `sip_domain_ids` records every id ever created, with
 * no foreign key, so neither a soft delete (the `sip_domains` row stays,
 * with `delete_time`) nor the deletion of the whole project (which cascades
 * to `sip_domains`) frees an id. Its primary key is what makes concurrent
 * creates of one id (from any projects) have exactly one winner.
 */
import { sql } from "drizzle-orm";
import { boolean, check, index, integer, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { projects } from "./admin.js";
import { timestamptz } from "./columns.js";

/** SipDomain.DomainType values as stored (UNSPECIFIED is stored as STANDARD). */
export const SIP_DOMAIN_TYPES = ["STANDARD", "COLLAB_DIRECT_ROUTING"] as const;
export type SipDomainTypeValue = (typeof SIP_DOMAIN_TYPES)[number];

/** SipDomain.TerminationMode values as stored (UNSPECIFIED is stored as TERMINATION_MODE_DISABLED). */
export const TERMINATION_MODES = ["TERMINATION_MODE_DISABLED", "PSTN_TRUNK", "PROGRAMMABLE"] as const;
export type TerminationModeValue = (typeof TERMINATION_MODES)[number];

/** A CidrBlock as stored in `sip_domains.cidr_blocks`. */
export interface StoredCidrBlock {
  displayName: string;
  cidrBlock: string;
}

/** A CallRecordingConfig as stored: enum values by their proto names. */
export interface StoredCallRecording {
  trigger: string;
  postProcessing: string[];
  recordingReadyUri: string;
  transcribe: string;
  transcriptionReadyUri: string;
}

/** A LoadBalancerConfig as stored in `sip_domain_aliases.load_balancer`. */
export interface StoredLoadBalancer {
  endpoints: { uri: string; priority: number; weight: number; enabled: boolean }[];
  failoverCallHandlerUris: string[];
}

/** Every SIP domain id ever issued; rows are never deleted. */
export const sipDomainIds = pgTable("sip_domain_ids", {
  id: text("id").primaryKey(),
  /** The project that created it (no foreign key: the row outlives the project). */
  projectId: text("project_id").notNull(),
  createTime: timestamptz("create_time").notNull(),
});

export const sipDomains = pgTable(
  "sip_domains",
  {
    /** The `{sip_domain}` part of the name, chosen by the client; unique across projects. */
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    displayName: text("display_name").notNull().default(""),
    allowRegister: boolean("allow_register").notNull().default(false),
    callTerminationMode: text("call_termination_mode", { enum: TERMINATION_MODES }).notNull(),
    callTerminationHandlerUris: text("call_termination_handler_uris").array().notNull(),
    /**
     * The domain's blocks, in order. Empty for the collaboration type, whose
     * blocks come from configuration (COLLAB_SIGNALLING_NETWORKS).
     */
    cidrBlocks: jsonb("cidr_blocks").$type<StoredCidrBlock[]>().notNull().default([]),
    /** Null when call recording is not configured. */
    callRecording: jsonb("call_recording").$type<StoredCallRecording>(),
    type: text("type", { enum: SIP_DOMAIN_TYPES }).notNull(),
    /** Collaboration type only (1 to 100); null for the others. */
    channelLimit: integer("channel_limit"),
    /** Collaboration type only: collab_direct_routing_status.verified; null for the others. */
    collabVerified: boolean("collab_verified"),
    /** The verification string last applied (the domain's published verification record). */
    collabVerificationRecord: text("collab_verification_record"),
    collabVerificationRecordTime: timestamptz("collab_verification_record_time"),
    collabVerifyTime: timestamptz("collab_verify_time"),
    /** Set only by the operator; always false for the collaboration type. */
    domainOptional: boolean("domain_optional").notNull().default(false),
    createTime: timestamptz("create_time").notNull(),
    updateTime: timestamptz("update_time").notNull(),
    /** Soft delete: set once, never cleared. */
    deleteTime: timestamptz("delete_time"),
  },
  (t) => [
    index("sip_domains_project_create_time_idx").on(t.projectId, t.createTime, t.id),
    // The live domain-optional domains, read to match unnamed calls and to refuse overlaps.
    index("sip_domains_domain_optional_idx")
      .on(t.id)
      .where(sql`${t.domainOptional} and ${t.deleteTime} is null`),
    check("sip_domains_type_check", sql`${t.type} in ('STANDARD', 'COLLAB_DIRECT_ROUTING')`),
    check(
      "sip_domains_call_termination_mode_check",
      sql`${t.callTerminationMode} in ('TERMINATION_MODE_DISABLED', 'PSTN_TRUNK', 'PROGRAMMABLE')`,
    ),
    check(
      "sip_domains_collab_check",
      sql`case when ${t.type} = 'COLLAB_DIRECT_ROUTING'
        then ${t.channelLimit} between 1 and 100 and ${t.collabVerified} is not null and not ${t.domainOptional}
        else ${t.channelLimit} is null and ${t.collabVerified} is null end`,
    ),
  ],
);

export const sipDomainAliases = pgTable(
  "sip_domain_aliases",
  {
    /** The `{sip_domain}` part of the parent's name (global, so it identifies the domain). */
    sipDomainId: text("sip_domain_id")
      .notNull()
      .references(() => sipDomains.id, { onDelete: "cascade" }),
    /** The `{alias}` part of the name, chosen by the client; unique within the domain. */
    id: text("id").notNull(),
    projectId: text("project_id").notNull(),
    displayName: text("display_name").notNull().default(""),
    /**
     * The load balancer. Null for the alias the service maintains (`managed`),
     * whose load balancer comes from configuration (COLLAB_SIP_PROXIES).
     */
    loadBalancer: jsonb("load_balancer").$type<StoredLoadBalancer>(),
    /** Created and maintained by the service; read-only to users. */
    managed: boolean("managed").notNull().default(false),
    createTime: timestamptz("create_time").notNull(),
    updateTime: timestamptz("update_time").notNull(),
  },
  (t) => [
    primaryKey({ name: "sip_domain_aliases_pk", columns: [t.sipDomainId, t.id] }),
    index("sip_domain_aliases_domain_create_time_idx").on(t.sipDomainId, t.createTime, t.id),
    check("sip_domain_aliases_load_balancer_check", sql`(${t.loadBalancer} is null) = ${t.managed}`),
  ],
);

export type SipDomainIdRow = typeof sipDomainIds.$inferSelect;
export type SipDomainRow = typeof sipDomains.$inferSelect;
export type NewSipDomainRow = typeof sipDomains.$inferInsert;
export type SipDomainAliasRow = typeof sipDomainAliases.$inferSelect;
export type NewSipDomainAliasRow = typeof sipDomainAliases.$inferInsert;
