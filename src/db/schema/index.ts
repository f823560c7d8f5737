/** The whole database schema, one file per area. */
export * from "./admin.js";
export * from "./events.js";
export * from "./idempotency.js";
export * from "./messaging.js";
export * from "./numbering.js";
export * from "./recordings.js";
export * from "./service-accounts.js";
export * from "./simulator.js";
export * from "./sip.js";
export * from "./sip-captures.js";
export * from "./transcriptions.js";
export * from "./voice.js";
export * from "./voice-calls.js";
