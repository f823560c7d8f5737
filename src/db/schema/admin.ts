/** Projects and API keys (the admin area). */
import { boolean, index, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { timestamptz } from "./columns.js";

export const projects = pgTable(
  "projects",
  {
    id: text("id").primaryKey(),
    displayName: text("display_name").notNull().default(""),
    /** The webhook signing key: 64 random bytes, base64. */
    signingKey: text("signing_key").notNull(),
    signingKeyCreateTime: timestamptz("signing_key_create_time").notNull(),
    createTime: timestamptz("create_time").notNull(),
  },
  (t) => [index("projects_create_time_id_idx").on(t.createTime.desc(), t.id.desc())],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    displayName: text("display_name").notNull().default(""),
    /** SHA-256 (hex) of the secret; the secret itself is never stored. */
    secretHash: text("secret_hash").notNull(),
    secretPrefix: text("secret_prefix").notNull(),
    disabled: boolean("disabled").notNull().default(false),
    createTime: timestamptz("create_time").notNull(),
    updateTime: timestamptz("update_time").notNull(),
  },
  (t) => [index("api_keys_create_time_id_idx").on(t.createTime.desc(), t.id.desc())],
);

export const apiKeyBindings = pgTable(
  "api_key_bindings",
  {
    apiKeyId: text("api_key_id")
      .notNull()
      .references(() => apiKeys.id, { onDelete: "cascade" }),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    /** Position in the key's binding list, so it reads back in order. */
    position: integer("position").notNull(),
    roles: text("roles").array().notNull(),
    permissions: text("permissions").array().notNull(),
  },
  (t) => [
    primaryKey({ name: "api_key_bindings_pk", columns: [t.apiKeyId, t.projectId] }),
    index("api_key_bindings_project_idx").on(t.projectId),
  ],
);

export type ProjectRow = typeof projects.$inferSelect;
export type NewProjectRow = typeof projects.$inferInsert;
export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type NewApiKeyRow = typeof apiKeys.$inferInsert;
export type ApiKeyBindingRow = typeof apiKeyBindings.$inferSelect;
export type NewApiKeyBindingRow = typeof apiKeyBindings.$inferInsert;
