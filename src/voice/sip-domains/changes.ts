/**
 * In-process news of committed changes to SIP domain rows, by domain id
 * (src/db/changes.ts): SipDomainsDomain reports every change once it has
 * committed, and the SIP edge's memory of domain rows
 * (src/telephony/sip-edge/domain-cache.ts) forgets the domain. Other
 * replicas' memories expire within their TTL (2 s).
 */
import { type Changes, changesPerDatabase } from "../../db/changes.js";

export const sipDomainChangesOf: (db: object) => Changes<string> = changesPerDatabase<string>();
