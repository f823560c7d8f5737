/**
 * Every proto service the public API serves, with its implementation built
 * from injected dependencies. Services not built yet are registered as
 * UNIMPLEMENTED so the whole contract is visible (reflection, REST routes).
 */

import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { Messages } from "../gen/enfonica/messaging/v1/messages_pb.js";
import { Unsubscribers } from "../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { PhoneNumberInstances } from "../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { PhoneNumbers } from "../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { RegulatoryListings } from "../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { Aliases } from "../gen/enfonica/voice/v1beta1/aliases_pb.js";
import { Calls } from "../gen/enfonica/voice/v1beta1/calls_pb.js";
import { Recordings } from "../gen/enfonica/voice/v1beta1/recordings_pb.js";
import { SipDomains } from "../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipInfoService } from "../gen/enfonica/voice/v1beta1/sip_info_pb.js";
import { Streams } from "../gen/enfonica/voice/v1beta1/streams_pb.js";
import { Transcriptions } from "../gen/enfonica/voice/v1beta1/transcriptions_pb.js";
import { ApiKeys } from "../gen/switchboard/admin/v1/api_keys_pb.js";
import { NumberingAdmin } from "../gen/switchboard/admin/v1/numbering_pb.js";
import { Projects } from "../gen/switchboard/admin/v1/projects_pb.js";
import { ServiceAccounts } from "../gen/switchboard/admin/v1/service_accounts_pb.js";
import { SimulatorAdmin } from "../gen/switchboard/admin/v1/simulator_pb.js";
import { SipDomainAdmin } from "../gen/switchboard/admin/v1/sip_domains_pb.js";
import { SipTrunks } from "../gen/switchboard/admin/v1/sip_trunks_pb.js";
import { WebhookDeliveries } from "../gen/switchboard/admin/v1/webhooks_pb.js";
import { SipUsers } from "../gen/switchboard/voice/v1/sip_users_pb.js";
import { WebhookDeliveries as WebhookInspector } from "../gen/switchboard/webhooks/v1/webhook_deliveries_pb.js";
import { ApiKeysDomain } from "./admin/api-keys.js";
import { ApiKeysRepository } from "./admin/api-keys-repository.js";
import { apiKeysService } from "./admin/api-keys-service.js";
import { numberingAdminService } from "./admin/numbering-service.js";
import { ProjectsDomain } from "./admin/projects.js";
import { ProjectsRepository } from "./admin/projects-repository.js";
import { projectsService } from "./admin/projects-service.js";
import { ServiceAccountKeysRepository } from "./admin/service-account-keys-repository.js";
import { ServiceAccountsDomain } from "./admin/service-accounts.js";
import { ServiceAccountsRepository } from "./admin/service-accounts-repository.js";
import { serviceAccountsService } from "./admin/service-accounts-service.js";
import { unimplementedService } from "./api/unimplemented.js";
import type { Clock } from "./clock.js";
import type { Config } from "./config.js";
import type { Db } from "./db/client.js";
import { WebhookDeliveriesDomain, webhookDeliveriesService } from "./events/admin-service.js";
import { webhookInspectorService } from "./events/inspector-service.js";
import { WebhookEventsRepository } from "./events/repository.js";
import { cachedSigningKeys } from "./events/signing-keys.js";
import type { WebhookWorker } from "./events/worker.js";
import type { Logger } from "./log.js";
import { sharedSpeech } from "./media/speech/index.js";
import { MessagesDomain } from "./messaging/messages/domain.js";
import { IncomingMessages } from "./messaging/messages/incoming.js";
import { SimulatedMessageNetwork } from "./messaging/messages/network.js";
import { OutgoingMessages } from "./messaging/messages/outgoing.js";
import { MessagesRepository } from "./messaging/messages/repository.js";
import { messagesService } from "./messaging/messages/service.js";
import { UnsubscribersDomain } from "./messaging/unsubscribers/domain.js";
import { UnsubscribersRepository } from "./messaging/unsubscribers/repository.js";
import { unsubscribersService } from "./messaging/unsubscribers/service.js";
import { numberingDomains } from "./numbering/domains.js";
import { phoneNumbersService } from "./numbering/inventory/service.js";
import { phoneNumberInstancesService } from "./numbering/phone-number-instances/service.js";
import { regulatoryListingsService } from "./numbering/regulatory-listings/service.js";
import { TokenUrl } from "./oauth/token-url.js";
import { createRecordings, type RecordingsDomain, recordingsService } from "./recordings/index.js";
import { CarrierRouter } from "./telephony/carrier-router.js";
import { RealScheduler, type Scheduler } from "./telephony/scheduler.js";
import { createSimulatorCarrier, simulatorRoutes } from "./telephony/simulator/index.js";
import { simulatorAdminService } from "./telephony/simulator/service.js";
import { simulatedSipDialogue } from "./telephony/simulator/sip-dialogue.js";
import { transcriptionsService } from "./transcriptions/service.js";
import { AliasesDomain } from "./voice/aliases/domain.js";
import { aliasesService } from "./voice/aliases/service.js";
import { CallsDomain } from "./voice/calls/domain.js";
import { CallEngine } from "./voice/calls/engine.js";
import { IncomingCalls } from "./voice/calls/incoming.js";
import { callsService } from "./voice/calls/service.js";
import { signingKeyOf } from "./voice/calls/writes.js";
import { sipDomainAdminService } from "./voice/sip-domains/admin-service.js";
import { SipDomainsDomain } from "./voice/sip-domains/domain.js";
import { VoiceStore } from "./voice/sip-domains/repository.js";
import { sipDomainsService } from "./voice/sip-domains/service.js";
import { SipInfoDomain } from "./voice/sip-info/domain.js";
import { sipInfoService } from "./voice/sip-info/service.js";
import { SipTrunksDomain } from "./voice/sip-trunks/domain.js";
import { SipTrunksRepository } from "./voice/sip-trunks/repository.js";
import { SecretBox } from "./voice/sip-trunks/secret-box.js";
import { sipTrunksService } from "./voice/sip-trunks/service.js";
import { SipUsersDomain } from "./voice/sip-users/domain.js";
import { sipUsersService } from "./voice/sip-users/service.js";
import { streamsService } from "./voice/streams/service.js";

export interface Deps {
  config: Config;
  clock: Clock;
  log: Logger;
  /** The database (PGlite or PostgreSQL), migrated. */
  db: Db;
  /** Tells the webhook worker that events were queued (optional: its poll finds them anyway). */
  kickWebhooks?: () => void;
  /** This process's webhook worker: the engine's state updates are enqueued leased to it (worker.ts, EnqueueLease). */
  webhookLeases?: Pick<WebhookWorker, "leaseForEnqueue">;
  /**
   * The call engine created calls go to. Without one, an engine on the
   * carrier simulator with real timers (SIMULATOR_TIME_SCALE) is made.
   */
  engine?: CallEngine;
  /** Recordings (shared with the download route and the engine); made from the config when absent. */
  recordings?: RecordingsDomain;
  /** The token endpoint's public URL (key files carry it); made from the config when absent. */
  tokenUrl?: TokenUrl;
  /** Timers of the simulated network for messages; real timers at SIMULATOR_TIME_SCALE when absent. */
  scheduler?: Scheduler;
  /** The origin of links the service hands out (opt-out links); RECORDING_LINK_BASE_URL when absent. */
  publicBaseUrl?: () => string;
  /** Where sent messages go; the carrier simulator on `scheduler` when absent. */
  messageNetwork?: SimulatedMessageNetwork;
}

/** The simulated network of outgoing messages, on `deps.scheduler` (real timers at SIMULATOR_TIME_SCALE by default). */
export function createMessageNetwork(
  deps: Pick<Deps, "db" | "clock" | "config" | "log" | "kickWebhooks" | "scheduler">,
): SimulatedMessageNetwork {
  return new SimulatedMessageNetwork({
    db: deps.db,
    scheduler: deps.scheduler ?? new RealScheduler(deps.clock, deps.config.simulatorTimeScale),
    routes: simulatorRoutes(deps.db, deps.clock),
    log: deps.log,
    ...(deps.kickWebhooks === undefined ? {} : { kickWebhooks: deps.kickWebhooks }),
  });
}

/**
 * The call engine of the service: the carrier simulator on `scheduler` (real
 * timers by default), behind a CarrierRouter the SIP edge attaches its
 * SipCarrier to when it starts.
 */
export function createCallEngine(
  deps: Omit<Deps, "engine">,
  options: {
    scheduler?: Scheduler;
    rememberSigningKeys?: boolean;
    /** Whether other processes can change the database (false: the embedded one): LISTEN for their changes. */
    listenForChanges?: boolean;
  } = {},
): CallEngine {
  const carrier = createSimulatorCarrier(deps.db, deps.clock, deps.config, {
    speech: sharedSpeech(),
    ...(options.scheduler === undefined ? {} : { scheduler: options.scheduler }),
  });
  const kick = deps.kickWebhooks;
  // Projects' signing keys remembered until rotated (src/events/signing-keys.ts): the service's own
  // engine; others (an API without a server, in tests) read them each time and open no LISTEN connection.
  const signingKeys = options.rememberSigningKeys
    ? cachedSigningKeys(
        deps.db,
        (projectId) => signingKeyOf(deps.db, projectId),
        deps.log,
        options.listenForChanges ?? true,
      )
    : undefined;
  return new CallEngine({
    db: deps.db,
    ...(signingKeys === undefined
      ? {}
      : { signingKeys: { get: (projectId) => signingKeys.cache.get(projectId), close: signingKeys.close } }),
    // The simulator until the SIP edge starts and attaches its carrier (src/telephony/carrier-router.ts).
    carrier: new CarrierRouter(carrier),
    scheduler: carrier.scheduler,
    log: deps.log,
    rates: deps.config.callRates,
    delivery: deps.config.webhooks,
    recordings: deps.recordings ?? createRecordings(deps),
    numbers: numberingDomains(deps.db, deps.clock, deps.config).instances,
    heartbeatSeconds: deps.config.engineHeartbeatSeconds,
    ...(kick === undefined ? {} : { kick }),
    ...(deps.webhookLeases === undefined ? {} : { webhookLeases: deps.webhookLeases }),
  });
}

export interface ServiceEntry {
  desc: DescService;
  // biome-ignore lint/suspicious/noExplicitAny: a heterogeneous list of implementations
  impl: Partial<ServiceImpl<any>>;
}

export function buildServices(deps: Deps): ServiceEntry[] {
  const numbering = numberingDomains(deps.db, deps.clock, deps.config);
  const unsubscribers = new UnsubscribersDomain(new UnsubscribersRepository(deps.db), deps.clock);
  const projects = new ProjectsRepository(deps.db);
  const deliveries = new WebhookDeliveriesDomain(
    new WebhookEventsRepository(deps.db),
    projects,
    deps.clock,
    deps.kickWebhooks ?? (() => {}),
  );
  const voice = new VoiceStore(deps.db);
  const sipUsers = new SipUsersDomain(voice, deps.clock, deps.config.sipDomains);
  const sipDomains = new SipDomainsDomain(voice, deps.clock, deps.config.sipDomains, sipUsers);
  const recordings = deps.recordings ?? createRecordings(deps);
  const engine = deps.engine ?? createCallEngine({ ...deps, recordings });
  const tokenUrl = deps.tokenUrl ?? new TokenUrl(deps.config);
  const entries: ServiceEntry[] = [
    { desc: Projects, impl: projectsService(new ProjectsDomain(projects, deps.clock)) },
    {
      desc: ApiKeys,
      impl: apiKeysService(new ApiKeysDomain(new ApiKeysRepository(deps.db), projects, deps.clock)),
    },
    { desc: RegulatoryListings, impl: regulatoryListingsService(numbering.listings) },
    { desc: Unsubscribers, impl: unsubscribersService(unsubscribers) },
    { desc: PhoneNumbers, impl: phoneNumbersService(numbering.inventory) },
    { desc: PhoneNumberInstances, impl: phoneNumberInstancesService(numbering.instances) },
    { desc: NumberingAdmin, impl: numberingAdminService(numbering) },
    {
      desc: Messages,
      impl: messagesService(
        new MessagesDomain(new MessagesRepository(deps.db)),
        new OutgoingMessages({
          db: deps.db,
          clock: deps.clock,
          numbers: numbering.instances,
          network: deps.messageNetwork ?? createMessageNetwork(deps),
          rates: deps.config.messageRates,
          publicBaseUrl: deps.publicBaseUrl ?? (() => deps.config.recordings.linkBaseUrl),
          ...(deps.kickWebhooks === undefined ? {} : { kickWebhooks: deps.kickWebhooks }),
        }),
      ),
    },
    { desc: SipDomains, impl: sipDomainsService(sipDomains) },
    { desc: SipDomainAdmin, impl: sipDomainAdminService(sipDomains) },
    { desc: SipUsers, impl: sipUsersService(sipUsers) },
    {
      desc: SipTrunks,
      impl: sipTrunksService(
        new SipTrunksDomain(
          new SipTrunksRepository(deps.db),
          deps.clock,
          new SecretBox(deps.config.sipCredentialsKey),
        ),
      ),
    },
    {
      desc: SimulatorAdmin,
      impl: simulatorAdminService(
        simulatorRoutes(deps.db, deps.clock),
        new IncomingMessages({
          db: deps.db,
          numbers: numbering.instances,
          clock: deps.clock,
          ...(deps.kickWebhooks === undefined ? {} : { kickWebhooks: deps.kickWebhooks }),
        }),
        new IncomingCalls({
          db: deps.db,
          numbers: numbering.instances,
          clock: deps.clock,
          engine,
          sipDomains,
        }),
      ),
    },
    { desc: WebhookDeliveries, impl: webhookDeliveriesService(deliveries) },
    { desc: WebhookInspector, impl: webhookInspectorService(deliveries) },
    { desc: Aliases, impl: aliasesService(new AliasesDomain(voice, deps.clock, deps.config.sipDomains)) },
    {
      desc: Calls,
      impl: callsService(
        new CallsDomain(deps.db, deps.clock, numbering.instances, engine, {
          concurrentCalls: deps.config.limits.concurrentCalls,
        }),
      ),
    },
    { desc: Recordings, impl: recordingsService(recordings) },
    {
      desc: Transcriptions,
      impl:
        recordings.transcriptions === undefined
          ? unimplementedService(Transcriptions)
          : transcriptionsService(recordings.transcriptions),
    },
    {
      desc: SipInfoService,
      impl: sipInfoService(
        new SipInfoDomain(deps.db, (facts) => simulatedSipDialogue(facts, deps.config.sipDomains.baseDomain)),
      ),
    },
    { desc: Streams, impl: streamsService(engine.streams) },
    // Last: the fuzz test seeds each method by its position.
    {
      desc: ServiceAccounts,
      impl: serviceAccountsService(
        new ServiceAccountsDomain(
          new ServiceAccountsRepository(deps.db),
          new ServiceAccountKeysRepository(deps.db),
          projects,
          deps.clock,
          () => tokenUrl.url,
        ),
      ),
    },
  ];
  return entries;
}
