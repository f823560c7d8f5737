/** The carrier simulator's routes (global, operator-owned; see src/telephony/simulator). */
import { index, integer, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { timestamptz } from "./columns.js";

export const simulatorRoutes = pgTable(
  "simulator_routes",
  {
    id: text("id").primaryKey(),
    /** `+` and up to 15 digits, or empty (every destination). Unique. */
    prefix: text("prefix").notNull(),
    /** ANSWER | BUSY | REJECT | NO_ANSWER | FAIL. */
    outcome: text("outcome").notNull(),
    ringSeconds: integer("ring_seconds").notNull(),
    talkSeconds: integer("talk_seconds").notNull(),
    /** SPEECH | SILENCE. */
    audio: text("audio").notNull(),
    digits: text("digits").notNull().default(""),
    /** What the remote party says (SPEECH): its words, repeated; empty: unintelligible speech. */
    words: text("words").notNull().default(""),
    errorCode: text("error_code").notNull().default(""),
    errorMessage: text("error_message").notNull().default(""),
    createTime: timestamptz("create_time").notNull(),
    /** What happens to a message sent to the prefix: DELIVER | FAIL | UNDELIVERED. */
    messageOutcome: text("message_outcome").notNull().default("DELIVER"),
    /** Seconds from SENT to DELIVERED (or UNDELIVERED). */
    messageDeliverSeconds: integer("message_deliver_seconds").notNull().default(1),
    messageErrorCode: text("message_error_code").notNull().default(""),
    messageErrorMessage: text("message_error_message").notNull().default(""),
  },
  (t) => [
    uniqueIndex("simulator_routes_prefix_key").on(t.prefix),
    index("simulator_routes_create_time_id_idx").on(t.createTime.desc(), t.id.desc()),
  ],
);

export type SimulatorRouteRow = typeof simulatorRoutes.$inferSelect;
export type NewSimulatorRouteRow = typeof simulatorRoutes.$inferInsert;
