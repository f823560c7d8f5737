/** The SIP domain settings of loadConfig: defaults, parsing, and refusals. */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import {
  DEFAULT_COLLAB_SIGNALLING_NETWORKS,
  DEFAULT_COLLAB_SIP_PROXIES,
} from "../../src/voice/sip-domains/config.js";

describe("SIP domain configuration", () => {
  it("defaults to sip.switchboard.local, documentation networks and three example proxies", () => {
    const { sipDomains } = loadConfig({});
    expect(sipDomains.baseDomain).toBe("sip.switchboard.local");
    expect(sipDomains.collab.signallingNetworks).toEqual(["192.0.2.0/24", "198.51.100.0/24"]);
    expect(sipDomains.collab.signallingNetworks).toEqual(DEFAULT_COLLAB_SIGNALLING_NETWORKS);
    expect(sipDomains.collab.sipProxies).toEqual(DEFAULT_COLLAB_SIP_PROXIES);
    expect(sipDomains.collab.sipProxies.map((p) => p.priority)).toEqual([0, 1, 2]);
    expect(sipDomains.collab.verificationSecret).toBe("switchboard-collab-simulator");
  });

  it("reads every setting, normalising the base domain", () => {
    const { sipDomains } = loadConfig({
      SIP_BASE_DOMAIN: "Voice.Example.COM.",
      COLLAB_SIGNALLING_NETWORKS: " 52.112.0.0/14 ,52.122.0.0/15,",
      COLLAB_SIP_PROXIES:
        "sip:sip.pstnhub.example:5061;transport=tls, sip:sip2.pstnhub.example:5061 priority=7, sips:sip3.pstnhub.example weight=1 priority=9",
      COLLAB_VERIFICATION_SECRET: "a-longer-secret",
    });
    expect(sipDomains.baseDomain).toBe("voice.example.com");
    expect(sipDomains.collab.signallingNetworks).toEqual(["52.112.0.0/14", "52.122.0.0/15"]);
    expect(sipDomains.collab.sipProxies).toEqual([
      { uri: "sip:sip.pstnhub.example:5061;transport=tls", priority: 0, weight: 10 },
      { uri: "sip:sip2.pstnhub.example:5061", priority: 7, weight: 10 },
      { uri: "sips:sip3.pstnhub.example", priority: 9, weight: 1 },
    ]);
    expect(sipDomains.collab.verificationSecret).toBe("a-longer-secret");
  });

  it.each([
    ["a one-label base domain", { SIP_BASE_DOMAIN: "localhost" }],
    ["a base domain with an underscore", { SIP_BASE_DOMAIN: "sip_x.example.com" }],
    ["a base domain with a bad label", { SIP_BASE_DOMAIN: "-sip.example.com" }],
    ["a network with host bits set", { COLLAB_SIGNALLING_NETWORKS: "192.0.2.1/24" }],
    ["an IPv6 network", { COLLAB_SIGNALLING_NETWORKS: "2001:db8::/32" }],
    ["an empty network list", { COLLAB_SIGNALLING_NETWORKS: " , " }],
    ["an http proxy", { COLLAB_SIP_PROXIES: "https://proxy.example.com" }],
    ["a proxy priority out of range", { COLLAB_SIP_PROXIES: "sip:p.example.com priority=65536" }],
    ["a proxy weight of 0", { COLLAB_SIP_PROXIES: "sip:p.example.com weight=0" }],
    ["an unknown proxy option", { COLLAB_SIP_PROXIES: "sip:p.example.com colour=blue" }],
    [
      "eleven proxies",
      { COLLAB_SIP_PROXIES: Array.from({ length: 11 }, (_, i) => `sip:p${i}.example.com`).join(",") },
    ],
    ["a short verification secret", { COLLAB_VERIFICATION_SECRET: "short" }],
  ])("refuses %s with a ConfigError", (_, env) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
  });
});
