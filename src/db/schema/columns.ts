import { timestamp } from "drizzle-orm/pg-core";

/**
 * The column type of every timestamp: timestamptz with millisecond precision,
 * exactly what a JS Date holds, so a value read back compares equal to the
 * one written and keyset pagination never skips or repeats a row.
 */
export const timestamptz = (name: string) =>
  timestamp(name, { withTimezone: true, precision: 3, mode: "date" });
