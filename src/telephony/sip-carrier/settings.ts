/**
 * Settings of the SipCarrier (real calls over the SIP edge), read from the
 * environment by src/config.ts:
 * - SIP_OUTBOUND: whether outgoing calls to `sip:` destinations go out over
 *   the SIP edge (true) or stay on the carrier simulator (false). Default
 *   true; it only matters while the edge runs (SIP_ENABLED, `npm start`).
 * - RTP_PORT_MIN, RTP_PORT_MAX: the UDP ports RTP sockets are bound in, one
 *   per call (an even port, RFC 3550 §11). Default 10000-20000. RTP_PORT_MIN=0
 *   binds any free port (tests). Each call takes an even port for RTP and
 *   the next one for RTCP, so the range must hold such a pair.
 * - RTP_TIMEOUT_SECONDS: an answered call from which no RTP came for this
 *   long is hung up (BYE) and ends FAILED with RTP_TIMEOUT (not while the
 *   peer holds the call). Default 30; 0 turns the timeout off.
 */
import type { CallMediaOptions } from "./call-media.js";

export interface SipCarrierSettings {
  outbound: boolean;
  rtpPortMin: number;
  rtpPortMax: number;
  rtpTimeoutSeconds: number;
}

/** A setting with a bad value (config.ts turns it into its ConfigError). */
export class SipCarrierSettingsError extends Error {
  override readonly name = "SipCarrierSettingsError";
}

function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > 65535) {
    throw new SipCarrierSettingsError(`${name} must be a port number between 0 and 65535, got "${raw}"`);
  }
  return Number(raw);
}

export function loadSipCarrierSettings(env: NodeJS.ProcessEnv): SipCarrierSettings {
  const rawOutbound = (env.SIP_OUTBOUND ?? "").trim().toLowerCase();
  if (!["", "true", "false", "1", "0"].includes(rawOutbound)) {
    throw new SipCarrierSettingsError(`SIP_OUTBOUND must be true or false, got "${env.SIP_OUTBOUND}"`);
  }
  const rtpPortMin = port(env, "RTP_PORT_MIN", 10000);
  const rtpPortMax = port(env, "RTP_PORT_MAX", rtpPortMin === 0 ? 0 : 20000);
  if (rtpPortMin !== 0 && rtpPortMax < rtpPortMin + 1) {
    throw new SipCarrierSettingsError(
      `RTP_PORT_MAX (${rtpPortMax}) must be above RTP_PORT_MIN (${rtpPortMin})`,
    );
  }
  if (rtpPortMin !== 0) {
    const even = rtpPortMin + (rtpPortMin % 2);
    if (even + 1 > rtpPortMax) {
      throw new SipCarrierSettingsError(
        `RTP_PORT_MIN..RTP_PORT_MAX (${rtpPortMin}-${rtpPortMax}) must hold an even port and the next one (RTP and RTCP)`,
      );
    }
  }
  const rawTimeout = (env.RTP_TIMEOUT_SECONDS ?? "").trim();
  if (rawTimeout !== "" && (!/^\d+$/.test(rawTimeout) || Number(rawTimeout) > 3600)) {
    throw new SipCarrierSettingsError(
      `RTP_TIMEOUT_SECONDS must be a whole number of seconds from 0 (off) to 3600, got "${env.RTP_TIMEOUT_SECONDS}"`,
    );
  }
  return {
    rtpTimeoutSeconds: rawTimeout === "" ? 30 : Number(rawTimeout),
    outbound: rawOutbound === "" || rawOutbound === "true" || rawOutbound === "1",
    rtpPortMin,
    rtpPortMax,
  };
}

/** What the SipCarrier's RTP sessions are opened with: bound on `address` (the SIP edge's). */
export function rtpMediaOptions(address: string, settings: SipCarrierSettings): CallMediaOptions {
  return {
    address,
    portMin: settings.rtpPortMin === 0 ? 0 : settings.rtpPortMin,
    portMax: settings.rtpPortMin === 0 ? 0 : settings.rtpPortMax,
    timeoutSeconds: settings.rtpTimeoutSeconds,
  };
}
