/**
 * Every setting of the service, read from the environment once and
 * validated. Nothing else in src/ reads process.env.
 */

import { resolve } from "node:path";
import type { DatabaseTimeouts } from "./db/client.js";
import { databaseUrlFrom, dataDirFrom, embeddedDurableFrom } from "./db/location.js";
import { DEFAULT_LOG_BUFFER_BYTES } from "./log.js";
import { loadMessageRates, type MessageRates } from "./messaging/messages/rates.js";
import { loadTracingConfig, type TracingConfig } from "./observability/tracing.js";
import { loadSipGuardSettings, type SipGuardSettings, SipGuardSettingsError } from "./sip/guard.js";
import { loadSimulatorTimeScale, SimulatorConfigError } from "./telephony/simulator/config.js";
import {
  loadSipCarrierSettings,
  type SipCarrierSettings,
  SipCarrierSettingsError,
} from "./telephony/sip-carrier/settings.js";
import {
  loadSipCaptureConfig,
  type SipCaptureConfig,
  SipCaptureConfigError,
} from "./telephony/sip-edge/capture-config.js";
import {
  loadTranscriberSettings,
  type TranscriberSettings,
  TranscriberSettingsError,
} from "./transcriptions/settings.js";
import { type CallRates, CallRatesError, loadCallRates } from "./voice/calls/rates.js";
import {
  loadSipDomainsConfig,
  type SipDomainsConfig,
  SipDomainsConfigError,
} from "./voice/sip-domains/config.js";

export interface Config {
  /** TCP port of the one port serving every transport. */
  port: number;
  /** Address to bind; 127.0.0.1 by default so a fresh start is not exposed. */
  host: string;
  /** PostgreSQL URL; when absent the embedded PGlite database is used. */
  databaseUrl: string | undefined;
  /**
   * How long a PostgreSQL server's statements and transactions may take, and
   * how long the service waits for its replies (not the embedded database's):
   * - DATABASE_STATEMENT_TIMEOUT_MS: the server cancels a statement running
   *   longer (SQLSTATE 57014; the request is DEADLINE_EXCEEDED). Default
   *   30000; 0: no limit.
   * - DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: the server ends a session
   *   whose transaction waits this long for its next statement, releasing
   *   its locks (a client cut off mid-transaction). Default 60000; 0: none.
   * - DATABASE_REPLY_TIMEOUT_MS: a connection that has waited this long for
   *   any reply is taken for lost (a half-open connection: the server or the
   *   network gone without a close), closed, and its requests UNAVAILABLE.
   *   Must exceed the statement timeout. Default the statement timeout plus
   *   15000 (45000), or 0 (none) when the statement timeout is 0.
   * - DATABASE_CONNECT_TIMEOUT_MS: how long a new connection may take to be
   *   ready, and how long a run of failed connection attempts (the database
   *   down, or a proxy in front of it closing them) may hold a request before
   *   it is UNAVAILABLE; later requests then fail after one attempt each
   *   until a connection gets through. Default 10000.
   * Sent to the server as session parameters at connect: a `statement_timeout`
   * or `idle_in_transaction_session_timeout` in DATABASE_URL's query wins, as
   * does its `connect_timeout` (in seconds).
   */
  databaseTimeouts: DatabaseTimeouts;
  /** Where the embedded database and other local state live. */
  dataDir: string;
  /**
   * EMBEDDED_DATABASE_DURABLE: the embedded database flushes each commit's
   * WAL to disk before it acknowledges it (default true); false: commits
   * reach the operating system's cache only (a machine crash may lose them).
   */
  embeddedDatabaseDurable: boolean;
  /** TLS certificate and key (PEM files); both or neither. */
  tls: { certFile: string; keyFile: string } | undefined;
  /** Browser origins allowed by CORS; `*` allows any. */
  corsAllowedOrigins: string[];
  /** pino log level. */
  logLevel: string;
  /**
   * LOG_BUFFER_BYTES: how far stdout may fall behind the log (its reader
   * slow or stopped) before lines are dropped, counted and reported; the
   * service never waits for stdout (src/log.ts). Default 16777216 (16 MiB).
   */
  logBufferBytes: number;
  /**
   * MAX_REQUEST_BYTES: the largest request message the port accepts, on
   * every protocol (REST bodies, Connect, gRPC and gRPC-Web messages), and
   * measured after decompression. Larger requests are refused with
   * RESOURCE_EXHAUSTED (REST: HTTP 413) without being read to the end.
   * Default 4194304 (4 MiB, gRPC's default message limit).
   */
  maxRequestBytes: number;
  /**
   * The operator token (SWITCHBOARD_OPERATOR_TOKEN): every permission
   * everywhere plus the admin API. Unset on the embedded database: generated
   * on first start and kept in the data directory.
   */
  operatorToken: string | undefined;
  /**
   * The SIP edge's listeners (src/telephony/sip-edge/edge.ts), started by
   * `npm start` (src/main.ts), not by build():
   * - SIP_ENABLED: whether to listen for SIP at all. Default true.
   * - SIP_HOST: the address of the listeners. Default HOST (127.0.0.1).
   * - SIP_PORT: UDP and TCP port. Default 5060; 0 picks a free port.
   * - SIP_TLS_PORT: SIP over TLS, with TLS_CERT_FILE and TLS_KEY_FILE (only
   *   when they are set). Default 5061.
   * - SIP_TLS_CA_FILE: a PEM file of CA certificates trusted, besides the
   *   system's, for SIP over TLS the edge opens (carrier trunks with a
   *   private CA). Default unset: the system's only.
   * - SIP_ADVERTISED_HOST: the host written in Via and Contact when the
   *   listeners sit behind NAT. Default: the bound address.
   * - SIP_DIGEST_ALGORITHMS: the digest challenges offered, in order of
   *   preference (RFC 8760): `SHA-256,MD5` by default. Clients answer the
   *   first they support; some (SIPp 3.6) answer only the first and know
   *   only MD5, and need `MD5` first or alone.
   */
  sip: {
    enabled: boolean;
    host: string;
    port: number;
    tlsPort: number;
    tlsCaFile: string | undefined;
    advertisedHost: string | undefined;
    digestAlgorithms: Array<"SHA-256" | "MD5">;
    /** SIP_CAPTURE*: the capture of real calls' SIP messages (src/telephony/sip-edge/capture-config.ts). */
    capture: SipCaptureConfig;
    /** SIP_GUARD_*: per-source limits and blocks at the edge (src/sip/guard.ts). */
    guard: SipGuardSettings;
  };
  /** SIP_OUTBOUND, RTP_PORT_MIN, RTP_PORT_MAX, RTP_TIMEOUT_SECONDS: real calls over the SIP edge (src/telephony/sip-carrier/settings.ts). */
  sipCarrier: SipCarrierSettings;
  /** SIP domains: base domain and the collaboration platform (src/voice/sip-domains/config.ts). */
  sipDomains: SipDomainsConfig;
  /**
   * SIP_CREDENTIALS_KEY: the key carrier trunk passwords are encrypted with
   * (AES-256-GCM under its SHA-256; at least 16 characters). Unset: trunk
   * passwords are stored as given, readable by anyone who can read the
   * database. Changing it makes stored passwords unreadable until they are
   * set again (src/voice/sip-trunks/secret-box.ts).
   */
  sipCredentialsKey: string | undefined;
  /**
   * NUMBER_QUARANTINE_SECONDS: how long the numbers of a deleted phone
   * number instance stay out of inventory before they can be provisioned
   * again. Default 2592000 (30 days); 0 releases them at once.
   */
  numberQuarantineSeconds: number;
  /**
   * ENGINE_HEARTBEAT_SECONDS: how often a call engine proves it is alive; an
   * engine silent for 3 intervals is dead and its calls end FAILED
   * ENGINE_LOST (src/voice/calls/liveness.ts). Default 10; 0 disables the
   * periodic heartbeat (the sweep at start still runs).
   */
  engineHeartbeatSeconds: number;
  /** SIMULATOR_TIME_SCALE: seconds of wall-clock time per simulated second (src/telephony/simulator/config.ts). */
  simulatorTimeScale: number;
  /**
   * ROLE: what this process does. `api` serves requests only, `worker` runs
   * background work only (webhook delivery), `all` (default) both.
   */
  role: Role;
  /** Outbound webhooks (src/events/). */
  webhooks: WebhooksConfig;
  /** CALL_RATES / CALL_RATES_CURRENCY: the price table of calls (src/voice/calls/rates.ts). */
  callRates: CallRates;
  /** MESSAGE_RATES / MESSAGE_RATES_CURRENCY: the price table of messages, per segment (src/messaging/messages/rates.ts). */
  messageRates: MessageRates;
  /** Recordings: blob store, download links, processing (src/recordings/). */
  recordings: RecordingsConfig;
  /**
   * TRANSCRIBER_*: the speech recognizer transcribing recordings of real
   * (SIP) calls (src/transcriptions/settings.ts); undefined: none.
   */
  transcriber: TranscriberSettings | undefined;
  /** Rate limits and the cap on calls in flight (docs/idempotency-and-limits.md). */
  limits: LimitsConfig;
  /**
   * IDEMPOTENCY_KEY_TTL_SECONDS: how long an Idempotency-Key is remembered
   * (src/api/idempotency/). Default 86400 (24 h).
   */
  idempotencyKeyTtlSeconds: number;
  /**
   * FAULT_KILL_AFTER_CREATE_COMMIT (tests only; never set in production): a
   * method (`enfonica.voice.v1beta1.Calls/CreateCall`) whose creates made
   * with an Idempotency-Key SIGKILL the process right after their commit,
   * before replying. Unset by default.
   */
  faultKillAfterCreateCommit: string | undefined;
  /** OpenTelemetry tracing from the standard OTEL_* variables (src/observability/tracing.ts). */
  tracing: TracingConfig;
  /** The OAuth 2.0 token endpoint of service accounts (src/oauth/). */
  oauth: OAuthConfig;
}

export interface OAuthConfig {
  /**
   * OAUTH_TOKEN_URL: the token endpoint's public URL, the only `aud` accepted
   * in assertions and the `token_uri` of key files. Default: the service's
   * own URL (scheme, HOST, PORT) + `/oauth2/token`.
   */
  tokenUrl: string | undefined;
  /** OAUTH_ACCESS_TOKEN_TTL_SECONDS: lifetime of access tokens. Default 3600 (the SDKs cache them 55 minutes). */
  accessTokenTtlSeconds: number;
}

/** A token bucket: `perSecond` tokens added per second up to `burst`; perSecond 0 turns it off. */
export interface RateLimit {
  perSecond: number;
  burst: number;
}

export interface LimitsConfig {
  /** RATE_LIMIT_PROJECT_PER_SECOND / _BURST: requests per project (default 100/s, burst 1000). */
  project: RateLimit;
  /** RATE_LIMIT_API_KEY_PER_SECOND / _BURST: requests per API key (default 100/s, burst 1000). */
  apiKey: RateLimit;
  /**
   * RATE_LIMIT_CREATE_CALL_PER_SECOND / _BURST: CreateCall and CreateMessage
   * per project, on top of the project's limit (default 10/s, burst 50).
   */
  createCall: RateLimit;
  /** CALL_CONCURRENCY_LIMIT: calls in flight per project (default 100; 0: no limit). */
  concurrentCalls: number;
}

export const BLOB_STORES = ["filesystem", "s3"] as const;
export type BlobStoreKind = (typeof BLOB_STORES)[number];

/**
 * The S3-compatible bucket of recording audio (src/recordings/s3-blobs.ts;
 * docs/recordings.md has each store's settings).
 */
export interface S3Config {
  /**
   * S3_ENDPOINT: the store's http(s) URL (`https://s3.example.com:9000`).
   * Unset: AWS S3's endpoint for the region.
   */
  endpoint: string | undefined;
  /** S3_REGION: the signing region. Default `us-east-1` (Cloudflare R2: `auto`). */
  region: string;
  /** S3_BUCKET: the bucket; it must exist (checked at start). */
  bucket: string;
  /**
   * S3_ACCESS_KEY_ID / S3_SECRET_ACCESS_KEY: the credentials, both or
   * neither. Neither: the AWS SDK's default chain (AWS_* variables, a
   * profile, an instance or task role).
   */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  /**
   * S3_FORCE_PATH_STYLE=true addresses the bucket in the path
   * (`{endpoint}/{bucket}/{key}`) rather than the host name; MinIO and
   * Ceph RGW usually need it. Default false.
   */
  forcePathStyle: boolean;
  /**
   * S3_KEY_PREFIX: prepended to every object key (`switchboard/` gives
   * `switchboard/recordings/...`), so several installations can share a
   * bucket. Default empty.
   */
  keyPrefix: string;
  /**
   * S3_REQUEST_TIMEOUT_MS: how long one request may take (connecting
   * included) before it is abandoned and tried again (3 attempts). Default
   * 30000.
   */
  requestTimeoutMs: number;
}

export interface RecordingsConfig {
  /**
   * BLOB_STORE: where recording audio is kept: `filesystem` (default; files
   * under BLOB_DIR) or `s3` (an S3-compatible bucket: the S3_* settings).
   */
  blobStore: BlobStoreKind;
  /** BLOB_DIR: where the filesystem blob store keeps audio. Default `<DATA_DIR>/blobs`. */
  blobDir: string;
  /**
   * The bucket, when S3_BUCKET is set (required with BLOB_STORE=s3; read
   * with the filesystem store too, for `switchboard recordings
   * migrate-blobs`).
   */
  s3: S3Config | undefined;
  /**
   * RECORDING_LINK_SECRET: the HMAC key of audio download links (at least
   * 32 characters). Unset on the embedded database: generated on first
   * start and kept in the data directory. Required with DATABASE_URL, so
   * that every replica signs and checks links with the same key.
   */
  linkSecret: string | undefined;
  /**
   * RECORDING_PROCESSING_TIMEOUT_MS: how long processing one recording may
   * take before it ends FAILED with TIMEOUT. Default 60000.
   */
  processingTimeoutMs: number;
  /**
   * RECORDING_LINK_BASE_URL: scheme, host and port prepended to download
   * links (`https://api.example.com`). Default empty: links are absolute
   * paths, to resolve against the endpoint the client called.
   */
  linkBaseUrl: string;
}

export const ROLES = ["api", "worker", "all"] as const;
export type Role = (typeof ROLES)[number];

export interface WebhooksConfig {
  /**
   * WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS=true allows destinations in private,
   * loopback, link-local, unique-local and unspecified ranges (tests, local
   * development). Default false: such destinations are refused.
   */
  allowPrivateDestinations: boolean;
  /** WEBHOOKS_TIMEOUT_MS: time limit of one request (redirects included). Default 10000. */
  timeoutMs: number;
  /** WEBHOOKS_POLL_INTERVAL_MS: how often an idle worker looks for due events. Default 1000. */
  pollIntervalMs: number;
  /**
   * WEBHOOKS_LEASE_SECONDS: how long a claimed event stays with its worker;
   * after that another worker may take it (a crashed worker's events are
   * retried). Must exceed the time of one round (URIs x timeout). Default 300.
   */
  leaseSeconds: number;
  /** WEBHOOKS_BATCH_SIZE: events one worker claims after a wait (after a full claim: as many as there is room for; up to 25 batches' worth in flight). Default 10. */
  batchSize: number;
}

/** Default of MAX_REQUEST_BYTES: 4 MiB, gRPC's default message size limit. */
export const DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** Default of NUMBER_QUARANTINE_SECONDS: 30 days. */
export const DEFAULT_NUMBER_QUARANTINE_SECONDS = 30 * 24 * 3600;

export class ConfigError extends Error {
  override name = "ConfigError";
}

function int(env: NodeJS.ProcessEnv, key: string, fallback: number, min: number, max: number): number {
  const raw = env[key];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${key} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function list(raw: string | undefined, fallback: string[]): string[] {
  if (raw === undefined) return fallback;
  return raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function operatorToken(raw: string | undefined, databaseUrl: string | undefined): string | undefined {
  if (raw === undefined || raw === "") {
    if (databaseUrl !== undefined) {
      throw new ConfigError("SWITCHBOARD_OPERATOR_TOKEN must be set when DATABASE_URL is set");
    }
    return undefined;
  }
  if (raw.length < 16 || /\s/.test(raw)) {
    throw new ConfigError("SWITCHBOARD_OPERATOR_TOKEN must be at least 16 characters without spaces");
  }
  return raw;
}

function decimal(env: NodeJS.ProcessEnv, key: string, fallback: number, min: number, max: number): number {
  const raw = env[key];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!/^[0-9]+(\.[0-9]+)?$/.test(raw.trim()) || n < min || n > max) {
    throw new ConfigError(`${key} must be a number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function rateLimit(env: NodeJS.ProcessEnv, prefix: string, perSecond: number, burst: number): RateLimit {
  return {
    perSecond: decimal(env, `${prefix}_PER_SECOND`, perSecond, 0, 1_000_000),
    burst: int(env, `${prefix}_BURST`, burst, 1, 10_000_000),
  };
}

function limits(env: NodeJS.ProcessEnv): LimitsConfig {
  return {
    project: rateLimit(env, "RATE_LIMIT_PROJECT", 100, 1000),
    apiKey: rateLimit(env, "RATE_LIMIT_API_KEY", 100, 1000),
    createCall: rateLimit(env, "RATE_LIMIT_CREATE_CALL", 10, 50),
    concurrentCalls: int(env, "CALL_CONCURRENCY_LIMIT", 100, 0, 1_000_000),
  };
}

function bool(env: NodeJS.ProcessEnv, key: string, fallback: boolean): boolean {
  const raw = env[key];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw new ConfigError(`${key} must be true or false, got ${JSON.stringify(raw)}`);
}

function oauth(env: NodeJS.ProcessEnv): OAuthConfig {
  const raw = env.OAUTH_TOKEN_URL || undefined;
  if (raw !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(raw);
    } catch {
      url = undefined;
    }
    if (url === undefined || !/^https?:$/.test(url.protocol) || url.search !== "" || url.hash !== "") {
      throw new ConfigError(
        "OAUTH_TOKEN_URL must be an http(s) URL without query, e.g. https://oauth2.example.com/token",
      );
    }
  }
  return {
    tokenUrl: raw,
    accessTokenTtlSeconds: int(env, "OAUTH_ACCESS_TOKEN_TTL_SECONDS", 3600, 60, 3600),
  };
}

function linkBaseUrl(raw: string | undefined): string {
  if (raw === undefined || raw === "") return "";
  if (!/^https?:\/\/[^/?#]+$/.test(raw.replace(/\/$/, ""))) {
    throw new ConfigError("RECORDING_LINK_BASE_URL must be an http(s) origin, e.g. https://api.example.com");
  }
  return raw.replace(/\/$/, "");
}

const KEY_PREFIX = /^([A-Za-z0-9._-]+\/)*$/;

function s3(env: NodeJS.ProcessEnv, blobStore: BlobStoreKind): S3Config | undefined {
  const bucket = env.S3_BUCKET || undefined;
  if (bucket === undefined) {
    if (blobStore === "s3") throw new ConfigError("S3_BUCKET must be set when BLOB_STORE=s3");
    return undefined;
  }
  // Bucket naming rules of S3 (and of the stores that follow it), dots allowed.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new ConfigError(
      `S3_BUCKET must be a bucket name (3 to 63 lower-case letters, digits, dots and hyphens), got ${JSON.stringify(bucket)}`,
    );
  }
  const endpoint = env.S3_ENDPOINT || undefined;
  if (endpoint !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(endpoint);
    } catch {
      url = undefined;
    }
    if (url === undefined || !/^https?:$/.test(url.protocol) || url.search !== "" || url.hash !== "") {
      throw new ConfigError(
        `S3_ENDPOINT must be an http(s) URL without query, e.g. https://s3.example.com, got ${JSON.stringify(endpoint)}`,
      );
    }
  }
  const region = env.S3_REGION || "us-east-1";
  if (!/^[a-z0-9-]{1,64}$/.test(region)) {
    throw new ConfigError(
      `S3_REGION must be a region name such as us-east-1 or auto, got ${JSON.stringify(region)}`,
    );
  }
  const accessKeyId = env.S3_ACCESS_KEY_ID || undefined;
  const secretAccessKey = env.S3_SECRET_ACCESS_KEY || undefined;
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ConfigError("S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together");
  }
  let keyPrefix = env.S3_KEY_PREFIX ?? "";
  if (keyPrefix !== "" && !keyPrefix.endsWith("/")) keyPrefix = `${keyPrefix}/`;
  if (!KEY_PREFIX.test(keyPrefix) || keyPrefix.split("/").some((s) => s === "." || s === "..")) {
    throw new ConfigError(
      `S3_KEY_PREFIX must be path segments of letters, digits, '.', '_' and '-' separated by '/', got ${JSON.stringify(env.S3_KEY_PREFIX)}`,
    );
  }
  return {
    endpoint,
    region,
    bucket,
    credentials:
      accessKeyId !== undefined && secretAccessKey !== undefined
        ? { accessKeyId, secretAccessKey }
        : undefined,
    forcePathStyle: bool(env, "S3_FORCE_PATH_STYLE", false),
    keyPrefix,
    requestTimeoutMs: int(env, "S3_REQUEST_TIMEOUT_MS", 30_000, 100, 600_000),
  };
}

function recordings(
  env: NodeJS.ProcessEnv,
  dataDir: string,
  databaseUrl: string | undefined,
): RecordingsConfig {
  const blobStore = (env.BLOB_STORE || "filesystem") as BlobStoreKind;
  if (!BLOB_STORES.includes(blobStore)) {
    throw new ConfigError(
      `BLOB_STORE must be one of ${BLOB_STORES.join(", ")}, got ${JSON.stringify(blobStore)}`,
    );
  }
  const secret = env.RECORDING_LINK_SECRET || undefined;
  if (secret === undefined && databaseUrl !== undefined) {
    throw new ConfigError("RECORDING_LINK_SECRET must be set when DATABASE_URL is set");
  }
  if (secret !== undefined && secret.length < 32) {
    throw new ConfigError("RECORDING_LINK_SECRET must be at least 32 characters");
  }
  return {
    blobStore,
    blobDir: resolve(env.BLOB_DIR || resolve(dataDir, "blobs")),
    s3: s3(env, blobStore),
    linkSecret: secret,
    processingTimeoutMs: int(env, "RECORDING_PROCESSING_TIMEOUT_MS", 60_000, 1, 3_600_000),
    linkBaseUrl: linkBaseUrl(env.RECORDING_LINK_BASE_URL),
  };
}

function webhooks(env: NodeJS.ProcessEnv): WebhooksConfig {
  return {
    allowPrivateDestinations: bool(env, "WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS", false),
    timeoutMs: int(env, "WEBHOOKS_TIMEOUT_MS", 10_000, 1, 600_000),
    pollIntervalMs: int(env, "WEBHOOKS_POLL_INTERVAL_MS", 1000, 1, 3_600_000),
    leaseSeconds: int(env, "WEBHOOKS_LEASE_SECONDS", 300, 1, 86_400),
    batchSize: int(env, "WEBHOOKS_BATCH_SIZE", 10, 1, 1000),
  };
}

function databaseTimeouts(env: NodeJS.ProcessEnv): DatabaseTimeouts {
  const hour = 3_600_000;
  const statementMs = int(env, "DATABASE_STATEMENT_TIMEOUT_MS", 30_000, 0, hour);
  const idleInTransactionMs = int(env, "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", 60_000, 0, hour);
  const replyMs = int(
    env,
    "DATABASE_REPLY_TIMEOUT_MS",
    statementMs === 0 ? 0 : statementMs + 15_000,
    0,
    2 * hour,
  );
  if (replyMs !== 0 && statementMs !== 0 && replyMs <= statementMs) {
    throw new ConfigError(
      "DATABASE_REPLY_TIMEOUT_MS must be longer than DATABASE_STATEMENT_TIMEOUT_MS (a statement may run that long before the server answers), or 0",
    );
  }
  if (replyMs !== 0 && statementMs === 0) {
    throw new ConfigError(
      "DATABASE_REPLY_TIMEOUT_MS needs a DATABASE_STATEMENT_TIMEOUT_MS shorter than it: with no statement timeout, a long statement would be taken for a lost connection",
    );
  }
  const connectMs = int(env, "DATABASE_CONNECT_TIMEOUT_MS", 10_000, 100, 10 * 60_000);
  return { statementMs, idleInTransactionMs, replyMs, connectMs };
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const certFile = env.TLS_CERT_FILE || undefined;
  const keyFile = env.TLS_KEY_FILE || undefined;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new ConfigError("TLS_CERT_FILE and TLS_KEY_FILE must be set together");
  }
  const logLevel = env.LOG_LEVEL || "info";
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}`);
  }
  const role = (env.ROLE || "all") as Role;
  if (!ROLES.includes(role)) throw new ConfigError(`ROLE must be one of ${ROLES.join(", ")}`);
  const databaseUrl = databaseUrlFrom(env);
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL must be a postgres:// or postgresql:// URL");
  }
  const dataDir = dataDirFrom(env);
  return {
    port: int(env, "PORT", 8080, 0, 65535),
    host: env.HOST || "127.0.0.1",
    databaseUrl,
    databaseTimeouts: databaseTimeouts(env),
    dataDir,
    embeddedDatabaseDurable: embeddedDurable(env),
    tls: certFile && keyFile ? { certFile, keyFile } : undefined,
    corsAllowedOrigins: list(env.CORS_ALLOWED_ORIGINS, ["*"]),
    logLevel,
    logBufferBytes: int(env, "LOG_BUFFER_BYTES", DEFAULT_LOG_BUFFER_BYTES, 65_536, 1024 * 1024 * 1024),
    maxRequestBytes: int(env, "MAX_REQUEST_BYTES", DEFAULT_MAX_REQUEST_BYTES, 1024, 1024 * 1024 * 1024),
    operatorToken: operatorToken(env.SWITCHBOARD_OPERATOR_TOKEN, databaseUrl),
    sip: {
      enabled: bool(env, "SIP_ENABLED", true),
      host: env.SIP_HOST || env.HOST || "127.0.0.1",
      port: int(env, "SIP_PORT", 5060, 0, 65535),
      tlsPort: int(env, "SIP_TLS_PORT", 5061, 0, 65535),
      tlsCaFile: env.SIP_TLS_CA_FILE || undefined,
      advertisedHost: env.SIP_ADVERTISED_HOST || undefined,
      digestAlgorithms: digestAlgorithms(env.SIP_DIGEST_ALGORITHMS),
      guard: sipGuard(env),
      capture: sipCapture(env),
    },
    sipCarrier: sipCarrier(env),
    sipDomains: sipDomains(env),
    sipCredentialsKey: sipCredentialsKey(env.SIP_CREDENTIALS_KEY),
    simulatorTimeScale: simulatorTimeScale(env),
    engineHeartbeatSeconds: int(env, "ENGINE_HEARTBEAT_SECONDS", 10, 0, 3600),
    numberQuarantineSeconds: int(
      env,
      "NUMBER_QUARANTINE_SECONDS",
      DEFAULT_NUMBER_QUARANTINE_SECONDS,
      0,
      10 * 366 * 24 * 3600,
    ),
    role,
    webhooks: webhooks(env),
    callRates: callRates(env),
    messageRates: messageRates(env),
    recordings: recordings(env, dataDir, databaseUrl),
    transcriber: transcriber(env),
    limits: limits(env),
    idempotencyKeyTtlSeconds: int(env, "IDEMPOTENCY_KEY_TTL_SECONDS", 86_400, 60, 30 * 86_400),
    faultKillAfterCreateCommit: env.FAULT_KILL_AFTER_CREATE_COMMIT || undefined,
    tracing: loadTracingConfig(env),
    oauth: oauth(env),
  };
}

function embeddedDurable(env: NodeJS.ProcessEnv): boolean {
  try {
    return embeddedDurableFrom(env);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

function callRates(env: NodeJS.ProcessEnv): CallRates {
  try {
    return loadCallRates(env);
  } catch (err) {
    if (err instanceof CallRatesError) throw new ConfigError(err.message);
    throw err;
  }
}

function messageRates(env: NodeJS.ProcessEnv): MessageRates {
  try {
    return loadMessageRates(env);
  } catch (err) {
    if (err instanceof CallRatesError) throw new ConfigError(err.message);
    throw err;
  }
}

function transcriber(env: NodeJS.ProcessEnv): TranscriberSettings | undefined {
  try {
    return loadTranscriberSettings(env);
  } catch (err) {
    if (err instanceof TranscriberSettingsError) throw new ConfigError(err.message);
    throw err;
  }
}

function sipCarrier(env: NodeJS.ProcessEnv): SipCarrierSettings {
  try {
    return loadSipCarrierSettings(env);
  } catch (err) {
    if (err instanceof SipCarrierSettingsError) throw new ConfigError(err.message);
    throw err;
  }
}

function sipGuard(env: NodeJS.ProcessEnv): SipGuardSettings {
  try {
    return loadSipGuardSettings(env);
  } catch (err) {
    if (err instanceof SipGuardSettingsError) throw new ConfigError(err.message);
    throw err;
  }
}

function sipDomains(env: NodeJS.ProcessEnv): SipDomainsConfig {
  try {
    return loadSipDomainsConfig(env);
  } catch (err) {
    if (err instanceof SipDomainsConfigError) throw new ConfigError(err.message);
    throw err;
  }
}

function sipCapture(env: NodeJS.ProcessEnv): SipCaptureConfig {
  try {
    return loadSipCaptureConfig(env);
  } catch (err) {
    if (err instanceof SipCaptureConfigError) throw new ConfigError(err.message);
    throw err;
  }
}

function digestAlgorithms(raw: string | undefined): Array<"SHA-256" | "MD5"> {
  const names = list(raw, ["SHA-256", "MD5"]).map((n) => n.toUpperCase());
  const valid = names.length > 0 && names.every((n) => n === "SHA-256" || n === "MD5");
  if (!valid || new Set(names).size !== names.length) {
    throw new ConfigError(
      `SIP_DIGEST_ALGORITHMS must list SHA-256 and/or MD5 once each, in order of preference, got ${JSON.stringify(raw)}`,
    );
  }
  return names as Array<"SHA-256" | "MD5">;
}

function sipCredentialsKey(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (raw.length < 16) throw new ConfigError("SIP_CREDENTIALS_KEY must be at least 16 characters");
  return raw;
}

function simulatorTimeScale(env: NodeJS.ProcessEnv): number {
  try {
    return loadSimulatorTimeScale(env);
  } catch (err) {
    if (err instanceof SimulatorConfigError) throw new ConfigError(err.message);
    throw err;
  }
}
