/**
 * Service accounts, their keys and bindings, and what the OAuth 2.0 token
 * endpoint keeps: the access tokens it issued (as hashes) and the assertions
 * it accepted (so that a replay is refused by every replica).
 */
import { boolean, index, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { projects } from "./admin.js";
import { timestamptz } from "./columns.js";

export const serviceAccounts = pgTable(
  "service_accounts",
  {
    id: text("id").primaryKey(),
    displayName: text("display_name").notNull().default(""),
    disabled: boolean("disabled").notNull().default(false),
    createTime: timestamptz("create_time").notNull(),
    updateTime: timestamptz("update_time").notNull(),
  },
  (t) => [index("service_accounts_create_time_id_idx").on(t.createTime.desc(), t.id.desc())],
);

/** The same shape and rules as `api_key_bindings` (src/admin/bindings.ts). */
export const serviceAccountBindings = pgTable(
  "service_account_bindings",
  {
    serviceAccountId: text("service_account_id")
      .notNull()
      .references(() => serviceAccounts.id, { onDelete: "cascade" }),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    /** Position in the account's binding list, so it reads back in order. */
    position: integer("position").notNull(),
    roles: text("roles").array().notNull(),
    permissions: text("permissions").array().notNull(),
  },
  (t) => [
    primaryKey({ name: "service_account_bindings_pk", columns: [t.serviceAccountId, t.projectId] }),
    index("service_account_bindings_project_idx").on(t.projectId),
  ],
);

export const serviceAccountKeys = pgTable(
  "service_account_keys",
  {
    /** 40 hex digits: the key file's `private_key_id`, the assertion's `kid`. */
    id: text("id").primaryKey(),
    serviceAccountId: text("service_account_id")
      .notNull()
      .references(() => serviceAccounts.id, { onDelete: "cascade" }),
    /** The public key, PEM (SubjectPublicKeyInfo); the private key is never stored. */
    publicKey: text("public_key").notNull(),
    disabled: boolean("disabled").notNull().default(false),
    createTime: timestamptz("create_time").notNull(),
    updateTime: timestamptz("update_time").notNull(),
  },
  (t) => [
    index("service_account_keys_account_create_time_id_idx").on(
      t.serviceAccountId,
      t.createTime.desc(),
      t.id.desc(),
    ),
  ],
);

/**
 * Access tokens issued by the token endpoint: the token is opaque
 * (`sbat_<id>_<random>`); only SHA-256 of it is kept. Deleting the key or the
 * account deletes its tokens.
 */
export const oauthAccessTokens = pgTable(
  "oauth_access_tokens",
  {
    id: text("id").primaryKey(),
    tokenHash: text("token_hash").notNull(),
    serviceAccountId: text("service_account_id")
      .notNull()
      .references(() => serviceAccounts.id, { onDelete: "cascade" }),
    keyId: text("key_id")
      .notNull()
      .references(() => serviceAccountKeys.id, { onDelete: "cascade" }),
    /** The services (`package.Service`) the token may call, from the assertion's scope. */
    services: text("services").array().notNull(),
    expireTime: timestamptz("expire_time").notNull(),
    createTime: timestamptz("create_time").notNull(),
  },
  (t) => [
    index("oauth_access_tokens_expire_time_idx").on(t.expireTime),
    index("oauth_access_tokens_key_idx").on(t.keyId),
    index("oauth_access_tokens_account_idx").on(t.serviceAccountId),
  ],
);

/**
 * Assertions already exchanged, by SHA-256 of the whole JWT, until they
 * expire: the primary key makes a replay fail on every replica at once.
 */
export const oauthUsedAssertions = pgTable(
  "oauth_used_assertions",
  {
    assertionHash: text("assertion_hash").primaryKey(),
    expireTime: timestamptz("expire_time").notNull(),
  },
  (t) => [index("oauth_used_assertions_expire_time_idx").on(t.expireTime)],
);

export type ServiceAccountRow = typeof serviceAccounts.$inferSelect;
export type NewServiceAccountRow = typeof serviceAccounts.$inferInsert;
export type ServiceAccountBindingRow = typeof serviceAccountBindings.$inferSelect;
export type ServiceAccountKeyRow = typeof serviceAccountKeys.$inferSelect;
export type NewServiceAccountKeyRow = typeof serviceAccountKeys.$inferInsert;
export type OauthAccessTokenRow = typeof oauthAccessTokens.$inferSelect;
export type NewOauthAccessTokenRow = typeof oauthAccessTokens.$inferInsert;
