/**
 * drizzle-kit configuration: `npm run db:generate` writes SQL migrations for
 * schema changes into src/db/migrations (committed; applied on start by
 * `Database.migrate()`). The schema is everything src/db/schema/index.ts
 * exports, one file per area.
 */
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./src/db/schema/index.ts",
  out: "./src/db/migrations",
  strict: true,
});
