/**
 * The repositories of the numbering area on one database handle, and a way
 * to run work in one transaction with repositories bound to it. Inside
 * `transaction(fn)`, `fn` must use only the repositories it is given (on
 * PGlite, a query on the outer handle deadlocks).
 */
import type { DbOrTx } from "../db/client.js";
import { InventoryRepository } from "./inventory/repository.js";
import { NumberHoldingsRepository } from "./phone-number-instances/holdings-repository.js";
import { PhoneNumberInstancesRepository } from "./phone-number-instances/repository.js";
import { RegulatoryListingsRepository } from "./regulatory-listings/repository.js";

export class NumberingStore {
  readonly inventory: InventoryRepository;
  readonly holdings: NumberHoldingsRepository;
  readonly instances: PhoneNumberInstancesRepository;
  readonly listings: RegulatoryListingsRepository;

  /** The database or transaction the repositories use (for `recordCreated` of idempotent creates). */
  constructor(readonly db: DbOrTx) {
    this.inventory = new InventoryRepository(db);
    this.holdings = new NumberHoldingsRepository(db);
    this.instances = new PhoneNumberInstancesRepository(db);
    this.listings = new RegulatoryListingsRepository(db);
  }

  /** Runs `fn` in one transaction (a savepoint when already in one); a throw rolls it all back. */
  transaction<T>(fn: (store: NumberingStore) => Promise<T>): Promise<T> {
    return (this.db as Extract<DbOrTx, { transaction: unknown }>).transaction((tx) =>
      fn(new NumberingStore(tx)),
    );
  }
}
