/**
 * Idempotency keys of creates (src/api/idempotency/): one row per project
 * and key, written in the same transaction as the resource it created, so a
 * retry after a crash between commit and response still finds it.
 */
import { index, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { projects } from "./admin.js";
import { timestamptz } from "./columns.js";

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    /** The client's Idempotency-Key (1-255 characters of [A-Za-z0-9._:~+/=-]). */
    key: text("key").notNull(),
    /** The method it was used with: `enfonica.voice.v1beta1.Calls/CreateCall`. */
    method: text("method").notNull(),
    /** SHA-256 (hex) of the request message in a canonical binary form. */
    requestHash: text("request_hash").notNull(),
    /** The resource the create made (its `name`): read back when `response` is missing. */
    resourceName: text("resource_name").notNull(),
    /** The response message (protobuf binary, base64); null until written after the commit. */
    response: text("response"),
    createTime: timestamptz("create_time").notNull(),
    /** After this the key is forgotten (create_time + 24 h) and purged. */
    expireTime: timestamptz("expire_time").notNull(),
  },
  (t) => [
    primaryKey({ name: "idempotency_keys_pkey", columns: [t.projectId, t.key] }),
    index("idempotency_keys_expire_time_idx").on(t.expireTime),
  ],
);

export type IdempotencyKeyRow = typeof idempotencyKeys.$inferSelect;
export type NewIdempotencyKeyRow = typeof idempotencyKeys.$inferInsert;
