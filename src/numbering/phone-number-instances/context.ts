/** What the instance operations run with: the store, the clock and the configuration. */
import type { Clock } from "../../clock.js";
import type { NumberingStore } from "../store.js";

export interface InstancesOptions {
  /** How long a deleted instance's numbers stay out of inventory, in seconds. */
  quarantineSeconds: number;
}

export interface InstancesContext {
  store: NumberingStore;
  clock: Clock;
  options: InstancesOptions;
}
