/**
 * The SIP edge: the service's own SIP listeners (UDP and TCP on SIP_HOST:
 * SIP_PORT, TLS on SIP_TLS_PORT when the service has a certificate), on the
 * SIP core (src/sip/). What it answers today:
 * - OPTIONS: 200 (the core answers it), for keep-alives and monitoring;
 * - REGISTER: SIP users of domains that allow it (./register.ts), with
 *   bindings in the database that every replica reads;
 * - INVITE: real calls (../sip-carrier/inbound.ts): digest when the domain
 *   has users, then the domain's rules and termination mode; PROGRAMMABLE
 *   calls are driven by the call engine on the SipCarrier
 *   (../sip-carrier/carrier.ts), which this edge attaches to the engine's
 *   CarrierRouter (../carrier-router.ts) — outgoing `sip:` calls then go
 *   out here too (SIP_OUTBOUND). Without an engine to attach to: 501.
 * Scanners (friendly-scanner and kin) get no answer at all; every refusal
 * is logged with its source and counted in /metrics
 * (`switchboard_sip_refused_total`).
 * Every message the listeners send and receive passes the capture
 * (./capture.ts, unless SIP_CAPTURE=false): the SIP dialogues that calls
 * claim with `capture.attach` are stored for GetSipInfo.
 */
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import tls from "node:tls";
import { Counter } from "prom-client";
import type { Clock } from "../../clock.js";
import type { Config } from "../../config.js";
import type { Db } from "../../db/client.js";
import type { Logger } from "../../log.js";
import type { SpeechEngine } from "../../media/speech/engine.js";
import { numberingDomains } from "../../numbering/domains.js";
import { registry } from "../../observability/metrics.js";
import { SipEndpoint } from "../../sip/endpoint.js";
import { SipGuard } from "../../sip/guard.js";
import { RefusalLogThrottle } from "../../sip/guard-log.js";
import { SipBindError, type TransportName } from "../../sip/transport.js";
import type { CallEngine } from "../../voice/calls/engine.js";
import { IncomingCalls } from "../../voice/calls/incoming.js";
import { sipDomainChangesOf } from "../../voice/sip-domains/changes.js";
import { SipDomainsDomain } from "../../voice/sip-domains/domain.js";
import { VoiceStore } from "../../voice/sip-domains/repository.js";
import { SipCaptureRepository } from "../../voice/sip-info/repository.js";
import { Registrar } from "../../voice/sip-registrations/registrar.js";
import { SipTrunksRepository } from "../../voice/sip-trunks/repository.js";
import { sipTrunkChangesOf, TrunkRouting } from "../../voice/sip-trunks/routing.js";
import { SecretBox } from "../../voice/sip-trunks/secret-box.js";
import { cachedSipCredentials } from "../../voice/sip-users/credentials-cache.js";
import { SipUsersDomain } from "../../voice/sip-users/domain.js";
import { CarrierRouter, isNumberDestination } from "../carrier-router.js";
import { RealScheduler } from "../scheduler.js";
import { SipCarrier } from "../sip-carrier/carrier.js";
import { inviteHandler } from "../sip-carrier/inbound.js";
import { outboundTargets } from "../sip-carrier/outbound.js";
import { rtpMediaOptions } from "../sip-carrier/settings.js";
import { trunkTargets } from "../sip-carrier/trunk-targets.js";
import { SipCapture } from "./capture.js";
import { DigestRealms } from "./digest-realms.js";
import { DomainCache } from "./domain-cache.js";
import { registerHandler } from "./register.js";

export interface SipEdgeOptions {
  config: Config;
  db: Db;
  clock: Clock;
  log: Logger;
  /** The call engine whose CarrierRouter takes the SipCarrier; without one INVITE is 501. */
  engine?: CallEngine;
  /** What SIP calls' `<Say>` speaks with (the simulator's engine); absent: speech-like noise. */
  speech?: SpeechEngine;
  /** The operator token: digest nonces are signed with a key derived from it (the same on every replica). */
  operatorToken: string;
  replicaId: string;
  /**
   * Whether to LISTEN for other replicas' SIP user changes (default true).
   * False on the embedded database: one process owns it, with a single
   * session, and its changes arrive in-process.
   */
  listenForChanges?: boolean;
}

const refusals = new Counter({
  name: "switchboard_sip_refused_total",
  help: "SIP requests the edge refused or dropped, by reason",
  labelNames: ["reason"],
  registers: [registry],
});

/** The capture's side the SIP carrier uses (./capture.ts). */
export interface SipEdgeCapture {
  /** Stores the SIP dialogue `sipCallId` (from its INVITE on) as the call `callId`'s; a no-op when SIP_CAPTURE=false. */
  attach(callId: string, sipCallId: string): void;
  /** Writes what was captured so far. */
  flush(): Promise<void>;
}

export interface SipEdge {
  /** The bound address of each transport listening. */
  local(transport: TransportName): { address: string; port: number } | undefined;
  /** The SipCarrier attached to the engine, when there is one. */
  readonly carrier: SipCarrier | undefined;
  capture: SipEdgeCapture;
  close(): Promise<void>;
}

/** Raised when a listener cannot bind: names the setting to change. */
export class SipEdgeStartError extends Error {
  override readonly name = "SipEdgeStartError";
}

export async function startSipEdge(options: SipEdgeOptions): Promise<SipEdge> {
  const { config, log } = options;
  const sip = config.sip;
  const count = (reason: string) => refusals.inc({ reason });
  const store = new VoiceStore(options.db);
  const users = new SipUsersDomain(store, options.clock, config.sipDomains);
  const capture = sip.capture.enabled
    ? new SipCapture({
        store: new SipCaptureRepository(options.db),
        maxMessages: sip.capture.maxMessages,
        maxBytes: sip.capture.maxBytes,
        log,
        localAddress: sip.advertisedHost,
        now: () => options.clock.now(),
      })
    : undefined;
  const guard = new SipGuard(sip.guard, {
    notice: ({ address, reason, detail }) =>
      log.warn({ source: address, why: reason, detail }, "SIP source refused"),
  });
  // Refusals outside the guard (scanners, malformed requests, digest failures, domain refusals):
  // one log line per source, reason and minute; /metrics counts every one.
  const refusalLog = new RefusalLogThrottle();
  const logFirst = (address: string, why: string) => refusalLog.first(address, why);
  let endpoint: SipEndpoint;
  try {
    endpoint = await SipEndpoint.start({
      transport: {
        address: sip.host,
        udpPort: sip.port,
        tcpPort: sip.port,
        tls:
          config.tls === undefined
            ? undefined
            : {
                port: sip.tlsPort,
                cert: readFileSync(config.tls.certFile),
                key: readFileSync(config.tls.keyFile),
              },
        // Outgoing TLS (trunks) trusts the system's CAs, and SIP_TLS_CA_FILE's when set.
        tlsClient:
          sip.tlsCaFile === undefined
            ? undefined
            : { ca: [...tls.rootCertificates, readFileSync(sip.tlsCaFile, "utf8")] },
        tap: capture?.tap,
        now: () => options.clock.now(),
      },
      scheduler: new RealScheduler(options.clock),
      ...(sip.advertisedHost === undefined ? {} : { advertisedHost: sip.advertisedHost }),
      userAgent: "Switchboard",
      screen: (request, source, inDialog) =>
        guard.screen(request.method, source.address, source.transport, inDialog),
      onEvent: (event) => {
        // The guard's refusals are counted by reason and logged by the guard, once per source and minute.
        if (event.type === "screened") {
          count(event.detail);
          return;
        }
        count(event.type);
        const source = `${event.source.transport} ${event.source.address}:${event.source.port}`;
        if (event.type === "internal-error") log.error({ source, detail: event.detail }, "SIP edge error");
        else if (refusalLog.first(event.source.address, event.type))
          log.info({ source, type: event.type, detail: event.detail }, "SIP request refused");
      },
    });
  } catch (err) {
    if (err instanceof SipBindError) {
      const setting = err.transport === "TLS" ? "SIP_TLS_PORT" : "SIP_PORT";
      throw new SipEdgeStartError(
        `${err.message}: set ${setting} (or SIP_HOST) to a free port, or SIP_ENABLED=false`,
        { cause: err },
      );
    }
    throw err;
  }
  const nonceKey = createHmac("sha256", options.operatorToken)
    .update("switchboard sip digest nonces")
    .digest();
  const digests = new DigestRealms({ nonceKey, clock: options.clock, algorithms: sip.digestAlgorithms });
  const registrar = new Registrar(store, options.clock);
  // A REGISTER or INVITE and its answer to the challenge read the domain once (./domain-cache.ts),
  // and users' credentials are remembered until they change (credentials-cache.ts).
  const domainRows = new DomainCache(store.sipDomains);
  const stopDomainChanges = sipDomainChangesOf(options.db).subscribe((id) => domainRows.forget(id));
  const credentials = cachedSipCredentials(options.db, users, log, options.listenForChanges ?? true);
  const edgeUsers = {
    credentials: (sipDomainId: string, username: string) =>
      credentials.cache.credentials(sipDomainId, username),
    hasUsers: (domain: { projectId: string; id: string }) => credentials.cache.hasUsers(domain),
  };
  endpoint.onRequest(
    "REGISTER",
    registerHandler({
      domains: domainRows,
      users: edgeUsers,
      guard,
      logFirst,
      registrar,
      baseDomain: config.sipDomains.baseDomain,
      algorithms: sip.digestAlgorithms,
      nonceKey,
      digests,
      clock: options.clock,
      replicaId: options.replicaId,
      log,
      refused: count,
    }),
  );
  const engine = options.engine;
  const router = engine?.options.carrier instanceof CarrierRouter ? engine.options.carrier : undefined;
  let sipCarrier: SipCarrier | undefined;
  let stopTrunkChanges = () => {};
  if (engine !== undefined && router !== undefined) {
    const sipDomains = new SipDomainsDomain(store, options.clock, config.sipDomains, edgeUsers, domainRows);
    // Carrier trunks: read from the database with a short cache (every replica sees admin changes),
    // forgotten at once when this process changes one.
    const trunks = new TrunkRouting(
      new SipTrunksRepository(options.db),
      new SecretBox(config.sipCredentialsKey),
      options.clock,
    );
    stopTrunkChanges = sipTrunkChangesOf(options.db).subscribe(() => trunks.invalidate());
    const toTrunks = trunkTargets({ trunks: () => trunks.trunks() });
    const toSip = outboundTargets({ registrar, baseDomain: config.sipDomains.baseDomain });
    const carrier = new SipCarrier({
      endpoint,
      scheduler: endpoint.scheduler,
      media: rtpMediaOptions(sip.host, config.sipCarrier),
      mediaAddress: sip.advertisedHost ?? endpoint.transport.local("UDP")?.address ?? sip.host,
      log,
      targetsOf: (to) => (isNumberDestination(to) ? toTrunks(to) : toSip(to)),
      ...(options.speech === undefined ? {} : { speech: options.speech }),
      ...(capture === undefined ? {} : { attach: (callId, sipCallId) => capture.attach(callId, sipCallId) }),
    });
    const numbers = numberingDomains(options.db, options.clock, config).instances;
    endpoint.onInvite(
      inviteHandler({
        carrier,
        numbers,
        incoming: new IncomingCalls({
          db: options.db,
          numbers,
          clock: options.clock,
          engine,
          sipDomains,
        }),
        resolve: (call) => sipDomains.resolveSipCall(call),
        domains: domainRows,
        users: edgeUsers,
        guard,
        logFirst,
        digests,
        baseDomain: config.sipDomains.baseDomain,
        log,
        refused: count,
        trunks,
      }),
    );
    router.attachSip(carrier, { outbound: config.sipCarrier.outbound, trunks });
    sipCarrier = carrier;
  } else {
    endpoint.onInvite((tx) => {
      count("invite-not-implemented");
      tx.respond(tx.reply(501, "Calls Over SIP Need The Call Engine"));
    });
  }
  for (const transport of ["UDP", "TCP", "TLS"] as const) {
    const local = endpoint.transport.local(transport);
    if (local) log.info({ transport, address: local.address, port: local.port }, "SIP listening");
  }
  return {
    local: (transport) => endpoint.transport.local(transport),
    carrier: sipCarrier,
    capture: capture ?? { attach: () => {}, flush: async () => {} },
    async close() {
      stopTrunkChanges();
      stopDomainChanges();
      if (sipCarrier !== undefined) router?.detachSip(sipCarrier);
      await endpoint.close();
      await capture?.close();
      await credentials.close();
    },
  };
}
