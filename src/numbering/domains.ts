/** The numbering area's domains, built on one database handle and clock. */
import type { Clock } from "../clock.js";
import type { DbOrTx } from "../db/client.js";
import { InventoryDomain } from "./inventory/domain.js";
import { PhoneNumberInstancesDomain } from "./phone-number-instances/domain.js";
import { RegulatoryListingsDomain } from "./regulatory-listings/domain.js";
import { NumberingStore } from "./store.js";

export interface NumberingDomains {
  inventory: InventoryDomain;
  instances: PhoneNumberInstancesDomain;
  listings: RegulatoryListingsDomain;
}

export function numberingDomains(
  db: DbOrTx,
  clock: Clock,
  options: { numberQuarantineSeconds: number },
): NumberingDomains {
  const store = new NumberingStore(db);
  return {
    inventory: new InventoryDomain(store.inventory, clock),
    instances: new PhoneNumberInstancesDomain(store, clock, {
      quarantineSeconds: options.numberQuarantineSeconds,
    }),
    listings: new RegulatoryListingsDomain(store, clock),
  };
}
