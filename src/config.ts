/**
 * Every setting of the service, read from the environment once and
 * validated. Nothing else in src/ reads process.env.
 */
import { resolve } from "node:path";
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
  /** Where the embedded database and other local state live. */
  dataDir: string;
  /** TLS certificate and key (PEM files); both or neither. */
  tls: { certFile: string; keyFile: string } | undefined;
  /** Browser origins allowed by CORS; `*` allows any. */
  corsAllowedOrigins: string[];
  /** pino log level. */
  logLevel: string;
  /**
   * The operator token (SWITCHBOARD_OPERATOR_TOKEN): every permission
   * everywhere plus the admin API. Unset on the embedded database: generated
   * on first start and kept in the data directory.
   */
  operatorToken: string | undefined;
  /** SIP domains: base domain and the collaboration platform (src/voice/sip-domains/config.ts). */
  sipDomains: SipDomainsConfig;
  /**
   * NUMBER_QUARANTINE_SECONDS: how long the numbers of a deleted phone
   * number instance stay out of inventory before they can be provisioned
   * again. Default 2592000 (30 days); 0 releases them at once.
   */
  numberQuarantineSeconds: number;
}

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
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL must be a postgres:// or postgresql:// URL");
  }
  return {
    port: int(env, "PORT", 8080, 0, 65535),
    host: env.HOST || "127.0.0.1",
    databaseUrl,
    dataDir: resolve(env.DATA_DIR || "./data"),
    tls: certFile && keyFile ? { certFile, keyFile } : undefined,
    corsAllowedOrigins: list(env.CORS_ALLOWED_ORIGINS, ["*"]),
    logLevel,
    operatorToken: operatorToken(env.SWITCHBOARD_OPERATOR_TOKEN, databaseUrl),
    sipDomains: sipDomains(env),
    numberQuarantineSeconds: int(
      env,
      "NUMBER_QUARANTINE_SECONDS",
      DEFAULT_NUMBER_QUARANTINE_SECONDS,
      0,
      10 * 366 * 24 * 3600,
    ),
  };
}

function sipDomains(env: NodeJS.ProcessEnv): SipDomainsConfig {
  try {
    return loadSipDomainsConfig(env);
  } catch (err) {
    if (err instanceof SipDomainsConfigError) throw new ConfigError(err.message);
    throw err;
  }
}
