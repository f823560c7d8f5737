/**
 * Time-limited download links of recording audio:
 *
 *   GET /v1beta1/projects/{project}/calls/{call}/recordings/{recording}/audio/{wav|mp3}
 *       ?expires={unix seconds}&sig={base64url HMAC-SHA256}
 *
 * `sig` is HMAC-SHA256(link secret, `{path}\n{expires}`). A link is valid
 * until `expires` (60 minutes after it was issued, by the service's clock);
 * it needs no credential, so whoever holds it may download. A missing,
 * malformed, tampered or expired link is 403 PERMISSION_DENIED, whether or
 * not the recording exists; a valid link to a recording (or rendition) that
 * is gone — deleted, say — is 404 NOT_FOUND.
 *
 * This is the one server route not derived from a google.api.http rule, on
 * purpose: it is not an RPC. It serves raw audio bytes to holders of a
 * signed link (no Authorization header, so browsers and media players can
 * fetch it), and the contract only says `audio[].uri` is such a link.
 *
 * The secret is RECORDING_LINK_SECRET, or on the embedded database without
 * one, generated on first start and kept in `<DATA_DIR>/recording-link-secret`.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import { AUDIO_FORMATS, type AudioFormat } from "../db/schema/index.js";

/** How long a link is valid. */
export const LINK_TTL_SECONDS = 60 * 60;

export interface AudioRef {
  projectId: string;
  callId: string;
  recordingId: string;
  format: AudioFormat;
}

/** The link secret in force: from configuration, or kept in (and first generated into) the data directory. */
export function resolveLinkSecret(config: Config): string {
  if (config.recordings.linkSecret !== undefined) return config.recordings.linkSecret;
  const file = join(config.dataDir, "recording-link-secret");
  try {
    const secret = readFileSync(file, "utf8").trim();
    if (secret.length >= 32) return secret;
  } catch {
    // not there yet: generate below
  }
  mkdirSync(config.dataDir, { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: "w" });
  return secret;
}

export function audioPath(ref: AudioRef): string {
  const seg = encodeURIComponent;
  return `/v1beta1/projects/${seg(ref.projectId)}/calls/${seg(ref.callId)}/recordings/${seg(ref.recordingId)}/audio/${ref.format}`;
}

const PATH = /^\/v1beta1\/projects\/([^/?#]+)\/calls\/([^/?#]+)\/recordings\/([^/?#]+)\/audio\/([a-z0-9]+)$/;

/** The audio a download path names, or undefined when the path is not a download path. */
export function parseAudioPath(path: string): AudioRef | undefined {
  const m = PATH.exec(path);
  if (m === null) return undefined;
  const format = m[4] as AudioFormat;
  if (!AUDIO_FORMATS.includes(format)) return undefined;
  try {
    return {
      projectId: decodeURIComponent(m[1]!),
      callId: decodeURIComponent(m[2]!),
      recordingId: decodeURIComponent(m[3]!),
      format,
    };
  } catch {
    return undefined;
  }
}

export class LinkSigner {
  constructor(
    private readonly secret: string,
    private readonly clock: Clock,
    /** Prepended to the path of every link (scheme, host, port); empty gives relative links. */
    private readonly baseUrl = "",
  ) {}

  private mac(path: string, expires: number): Buffer {
    return createHmac("sha256", this.secret).update(`${path}\n${expires}`, "utf8").digest();
  }

  /** A link to `ref`, valid for LINK_TTL_SECONDS from now. */
  sign(ref: AudioRef): string {
    const path = audioPath(ref);
    const expires = Math.floor(this.clock.now().getTime() / 1000) + LINK_TTL_SECONDS;
    return `${this.baseUrl}${path}?expires=${expires}&sig=${this.mac(path, expires).toString("base64url")}`;
  }

  /** Whether `path` with `query` is an unexpired, untampered link. */
  verify(path: string, query: URLSearchParams): boolean {
    const expiresRaw = query.get("expires") ?? "";
    const sig = query.get("sig") ?? "";
    if (!/^\d{1,12}$/.test(expiresRaw) || !/^[A-Za-z0-9_-]{43}$/.test(sig)) return false;
    const expires = Number(expiresRaw);
    const given = Buffer.from(sig, "base64url");
    const expected = this.mac(path, expires);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
    return this.clock.now().getTime() < expires * 1000;
  }
}
