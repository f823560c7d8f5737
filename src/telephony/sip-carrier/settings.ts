/**
 * Settings of the SipCarrier (real calls over the SIP edge), read from the
 * environment by src/config.ts:
 * - SIP_OUTBOUND: whether outgoing calls to `sip:` destinations go out over
 *   the SIP edge (true) or stay on the carrier simulator (false). Default
 *   true; it only matters while the edge runs (SIP_ENABLED, `npm start`).
 * - RTP_PORT_MIN, RTP_PORT_MAX: the UDP ports RTP sockets are bound in, one
 *   per call (an even port, RFC 3550 §11). Default 10000-20000. RTP_PORT_MIN=0
 *   binds any free port (tests).
 */

export interface SipCarrierSettings {
  outbound: boolean;
  rtpPortMin: number;
  rtpPortMax: number;
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
  return {
    outbound: rawOutbound === "" || rawOutbound === "true" || rawOutbound === "1",
    rtpPortMin,
    rtpPortMax,
  };
}
