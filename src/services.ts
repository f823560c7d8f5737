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
import { ApiKeys } from "../gen/switchboard/admin/v1/api_keys_pb.js";
import { Projects } from "../gen/switchboard/admin/v1/projects_pb.js";
import { ApiKeysDomain } from "./admin/api-keys.js";
import { ApiKeysRepository } from "./admin/api-keys-repository.js";
import { apiKeysService } from "./admin/api-keys-service.js";
import { ProjectsDomain } from "./admin/projects.js";
import { ProjectsRepository } from "./admin/projects-repository.js";
import { projectsService } from "./admin/projects-service.js";
import { unimplementedService } from "./api/unimplemented.js";
import type { Clock } from "./clock.js";
import type { Config } from "./config.js";
import type { Db } from "./db/client.js";
import type { Logger } from "./log.js";
import { UnsubscribersDomain } from "./messaging/unsubscribers/domain.js";
import { UnsubscribersRepository } from "./messaging/unsubscribers/repository.js";
import { unsubscribersService } from "./messaging/unsubscribers/service.js";
import { RegulatoryListingsDomain } from "./numbering/regulatory-listings/domain.js";
import { RegulatoryListingsRepository } from "./numbering/regulatory-listings/repository.js";
import { regulatoryListingsService } from "./numbering/regulatory-listings/service.js";

export interface Deps {
  config: Config;
  clock: Clock;
  log: Logger;
  /** The database (PGlite or PostgreSQL), migrated. */
  db: Db;
}

export interface ServiceEntry {
  desc: DescService;
  // biome-ignore lint/suspicious/noExplicitAny: a heterogeneous list of implementations
  impl: Partial<ServiceImpl<any>>;
}

export function buildServices(deps: Deps): ServiceEntry[] {
  const listings = new RegulatoryListingsDomain(new RegulatoryListingsRepository(deps.db), deps.clock);
  const unsubscribers = new UnsubscribersDomain(new UnsubscribersRepository(deps.db), deps.clock);
  const projects = new ProjectsRepository(deps.db);
  const entries: ServiceEntry[] = [
    { desc: Projects, impl: projectsService(new ProjectsDomain(projects, deps.clock)) },
    {
      desc: ApiKeys,
      impl: apiKeysService(new ApiKeysDomain(new ApiKeysRepository(deps.db), projects, deps.clock)),
    },
    { desc: RegulatoryListings, impl: regulatoryListingsService(listings) },
    { desc: Unsubscribers, impl: unsubscribersService(unsubscribers) },
    { desc: PhoneNumbers, impl: unimplementedService(PhoneNumbers) },
    { desc: PhoneNumberInstances, impl: unimplementedService(PhoneNumberInstances) },
    { desc: Messages, impl: unimplementedService(Messages) },
    { desc: SipDomains, impl: unimplementedService(SipDomains) },
    { desc: Aliases, impl: unimplementedService(Aliases) },
    { desc: Calls, impl: unimplementedService(Calls) },
    { desc: Recordings, impl: unimplementedService(Recordings) },
  ];
  return entries;
}
