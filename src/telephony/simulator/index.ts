/**
 * The carrier simulator, assembled: the operator's routes in the database,
 * real timers at SIMULATOR_TIME_SCALE on the service clock. The call engine
 * takes a Carrier; this is the one it gets until a SIP trunk adapter exists.
 */
import type { Clock } from "../../clock.js";
import type { Config } from "../../config.js";
import type { Db } from "../../db/client.js";
import { RealScheduler, type Scheduler } from "../scheduler.js";
import { SimulatorCarrier, type SimulatorOptions } from "./carrier.js";
import { SimulatorRoutesRepository } from "./repository.js";
import { SimulatorRoutes } from "./routes.js";

export function simulatorRoutes(db: Db, clock: Clock): SimulatorRoutes {
  return new SimulatorRoutes(new SimulatorRoutesRepository(db), clock);
}

export function createSimulatorCarrier(
  db: Db,
  clock: Clock,
  config: Pick<Config, "simulatorTimeScale">,
  options: SimulatorOptions & { scheduler?: Scheduler } = {},
): SimulatorCarrier {
  const { scheduler, ...rest } = options;
  return new SimulatorCarrier(
    simulatorRoutes(db, clock),
    scheduler ?? new RealScheduler(clock, config.simulatorTimeScale),
    rest,
  );
}
