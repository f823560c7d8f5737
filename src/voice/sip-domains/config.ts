/**
 * Settings of SIP domains, read by `loadConfig` (src/config.ts) from the
 * environment it is given; nothing here reads process.env.
 *
 * | variable                     | default                                   |
 * | ---------------------------- | ----------------------------------------- |
 * | SIP_BASE_DOMAIN              | sip.switchboard.local                     |
 * | COLLAB_SIGNALLING_NETWORKS   | 192.0.2.0/24,198.51.100.0/24              |
 * | COLLAB_SIP_PROXIES           | three proxies of sip*.collab.example, TLS |
 * | COLLAB_VERIFICATION_SECRET   | switchboard-collab-simulator              |
 *
 * - SIP_BASE_DOMAIN: every domain's FQDN is `<sip_domain_id>.<base>`. A DNS
 *   name: dot-separated labels of letters, digits and hyphens, lowercased.
 * - COLLAB_SIGNALLING_NETWORKS: the collaboration platform's published SIP
 *   signalling networks, comma-separated IPv4 CIDR blocks (host bits zero).
 *   They become the read-only `cidr_blocks` of every
 *   DOMAIN_TYPE_COLLAB_DIRECT_ROUTING domain. The defaults are the
 *   documentation ranges TEST-NET-1 and TEST-NET-2 (RFC 5737): they stand
 *   for a platform's published ranges and route nowhere.
 * - COLLAB_SIP_PROXIES: the platform's SIP proxies, the endpoints of the
 *   read-only load balancer alias of every such domain. Comma-separated
 *   entries `<sip or sips URI>[ priority=<0-65535>][ weight=<1-65535>]`;
 *   priority defaults to the entry's position (0, 1, 2, ...: tried in
 *   order), weight to 10. 1 to 10 entries. The defaults use the reserved
 *   `.example` domain (RFC 2606) and model a platform with a primary, a
 *   secondary and a tertiary proxy on SIP over TLS (port 5061).
 * - COLLAB_VERIFICATION_SECRET: the key of the simulated platform's
 *   verification check (see `platformAccepts` in ./collab.ts), at least 8
 *   characters. The default is public: the platform is a simulator.
 *
 * Changing the networks or proxies changes every collaboration domain at
 * once: they are read from here, not copied into each domain.
 */
import { parseCidr } from "./cidr.js";

export interface CollabSipProxy {
  uri: string;
  priority: number;
  weight: number;
}

export interface SipDomainsConfig {
  /** The base domain of every SIP domain's FQDN. */
  baseDomain: string;
  /** The collaboration platform (DOMAIN_TYPE_COLLAB_DIRECT_ROUTING). */
  collab: {
    /** Its SIP signalling networks: the read-only cidr_blocks of such domains. */
    signallingNetworks: string[];
    /** Its SIP proxies: the endpoints of the read-only load balancer alias. */
    sipProxies: CollabSipProxy[];
    /** Key of the simulated platform's verification check. */
    verificationSecret: string;
  };
}

export const DEFAULT_SIP_BASE_DOMAIN = "sip.switchboard.local";
export const DEFAULT_COLLAB_SIGNALLING_NETWORKS = ["192.0.2.0/24", "198.51.100.0/24"];
export const DEFAULT_COLLAB_SIP_PROXIES: CollabSipProxy[] = [
  { uri: "sip:sip.collab.example:5061;transport=tls", priority: 0, weight: 10 },
  { uri: "sip:sip2.collab.example:5061;transport=tls", priority: 1, weight: 10 },
  { uri: "sip:sip3.collab.example:5061;transport=tls", priority: 2, weight: 10 },
];
export const DEFAULT_COLLAB_VERIFICATION_SECRET = "switchboard-collab-simulator";

/** The most endpoints a load balancer may have (aliases.proto). */
const MAX_PROXIES = 10;
const DEFAULT_PROXY_WEIGHT = 10;

/** A setting that does not parse; src/config.ts turns it into a ConfigError. */
export class SipDomainsConfigError extends Error {
  override name = "SipDomainsConfigError";
}

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const SIP_URI = /^sips?:[^\s,]+$/i;

function baseDomain(raw: string | undefined): string {
  if (raw === undefined || raw === "") return DEFAULT_SIP_BASE_DOMAIN;
  const name = raw.toLowerCase().replace(/\.$/, "");
  const labels = name.split(".");
  // The FQDN adds a label of up to 30 characters and a dot; DNS names are at most 253.
  if (labels.length < 2 || name.length > 253 - 31 || !labels.every((l) => DNS_LABEL.test(l))) {
    throw new SipDomainsConfigError(
      `SIP_BASE_DOMAIN must be a DNS name of at least two labels, e.g. sip.example.com, got ${JSON.stringify(raw)}`,
    );
  }
  return name;
}

function entries(raw: string): string[] {
  return raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function networks(raw: string | undefined): string[] {
  if (raw === undefined || raw === "") return [...DEFAULT_COLLAB_SIGNALLING_NETWORKS];
  const blocks = entries(raw);
  if (blocks.length === 0 || blocks.length > 100) {
    throw new SipDomainsConfigError("COLLAB_SIGNALLING_NETWORKS must list 1 to 100 IPv4 CIDR blocks");
  }
  for (const block of blocks) {
    const parsed = parseCidr(block);
    if (!parsed.ok) throw new SipDomainsConfigError(`COLLAB_SIGNALLING_NETWORKS: ${parsed.error}`);
  }
  return blocks;
}

function integer(key: string, text: string, min: number, max: number): number {
  const n = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new SipDomainsConfigError(`COLLAB_SIP_PROXIES: ${key} must be ${min} to ${max}, got ${text}`);
  }
  return n;
}

function proxies(raw: string | undefined): CollabSipProxy[] {
  if (raw === undefined || raw === "") return DEFAULT_COLLAB_SIP_PROXIES.map((p) => ({ ...p }));
  const list = entries(raw);
  if (list.length === 0 || list.length > MAX_PROXIES) {
    throw new SipDomainsConfigError(`COLLAB_SIP_PROXIES must list 1 to ${MAX_PROXIES} SIP URIs`);
  }
  return list.map((entry, position) => {
    const [uri, ...options] = entry.split(/\s+/);
    if (uri === undefined || !SIP_URI.test(uri)) {
      throw new SipDomainsConfigError(
        `COLLAB_SIP_PROXIES: ${JSON.stringify(entry)} must start with a sip: or sips: URI`,
      );
    }
    const proxy: CollabSipProxy = { uri, priority: position, weight: DEFAULT_PROXY_WEIGHT };
    for (const option of options) {
      const [key, value] = option.split("=");
      if (key === "priority" && value !== undefined) proxy.priority = integer(key, value, 0, 65535);
      else if (key === "weight" && value !== undefined) proxy.weight = integer(key, value, 1, 65535);
      else throw new SipDomainsConfigError(`COLLAB_SIP_PROXIES: unknown option ${JSON.stringify(option)}`);
    }
    return proxy;
  });
}

function secret(raw: string | undefined): string {
  if (raw === undefined || raw === "") return DEFAULT_COLLAB_VERIFICATION_SECRET;
  if (raw.length < 8)
    throw new SipDomainsConfigError("COLLAB_VERIFICATION_SECRET must be at least 8 characters");
  return raw;
}

/** Reads the SIP domain settings from `env`; throws SipDomainsConfigError for a bad value. */
export function loadSipDomainsConfig(env: NodeJS.ProcessEnv): SipDomainsConfig {
  return {
    baseDomain: baseDomain(env.SIP_BASE_DOMAIN),
    collab: {
      signallingNetworks: networks(env.COLLAB_SIGNALLING_NETWORKS),
      sipProxies: proxies(env.COLLAB_SIP_PROXIES),
      verificationSecret: secret(env.COLLAB_VERIFICATION_SECRET),
    },
  };
}
