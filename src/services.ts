/**
 * Every proto service the public API serves, with its implementation built
 * from injected dependencies. Services not built yet are registered as
 * UNIMPLEMENTED so the whole contract is visible (reflection, REST routes).
 */
import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { Messages } from "../gen/enfonica/messaging/v1/messages_pb.js";
import { PhoneNumberInstances } from "../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { PhoneNumbers } from "../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { Aliases } from "../gen/enfonica/voice/v1beta1/aliases_pb.js";
import { Calls } from "../gen/enfonica/voice/v1beta1/calls_pb.js";
import { Recordings } from "../gen/enfonica/voice/v1beta1/recordings_pb.js";
import { SipDomains } from "../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { unimplementedService } from "./api/unimplemented.js";
import type { Clock } from "./clock.js";
import type { Config } from "./config.js";
import type { Logger } from "./log.js";

export interface Deps {
  config: Config;
  clock: Clock;
  log: Logger;
}

export interface ServiceEntry {
  desc: DescService;
  // biome-ignore lint/suspicious/noExplicitAny: a heterogeneous list of implementations
  impl: Partial<ServiceImpl<any>>;
}

export function buildServices(_deps: Deps): ServiceEntry[] {
  const entries: ServiceEntry[] = [
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
