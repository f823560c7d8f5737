/**
 * build() assembles the application from configuration and injected
 * dependencies; listening happens only when this file is run as main.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createErrorInterceptor } from "./api/error-interceptor.js";
import { createValidationInterceptor } from "./api/validation.js";
import { type Clock, systemClock } from "./clock.js";
import { type Config, loadConfig } from "./config.js";
import { createLogger, type Logger } from "./log.js";
import { buildServices, type ServiceEntry } from "./services.js";

export interface App {
  config: Config;
  log: Logger;
  services: ServiceEntry[];
  /** The request handler of the one port: Connect, gRPC, gRPC-Web, REST, health. */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** Starts listening; resolves with the bound address. */
  listen(port?: number, host?: string): Promise<AddressInfo>;
  /** Stops listening and releases every resource. */
  close(): Promise<void>;
}

export interface BuildOptions {
  config?: Config;
  clock?: Clock;
  log?: Logger;
}

export async function build(options: BuildOptions = {}): Promise<App> {
  const config = options.config ?? loadConfig();
  const log = options.log ?? createLogger(config.logLevel);
  const clock = options.clock ?? systemClock;
  const services = buildServices({ config, clock, log });

  const interceptors: Interceptor[] = [createErrorInterceptor(log), createValidationInterceptor()];
  const routes = (router: ConnectRouter) => {
    for (const s of services) router.service(s.desc, s.impl);
  };
  const handler = connectNodeAdapter({ routes, interceptors });

  let server: Server | undefined;
  return {
    config,
    log,
    services,
    handler,
    async listen(port = config.port, host = config.host) {
      server = createServer(handler);
      await new Promise<void>((resolve, reject) => {
        server!.once("error", reject);
        server!.listen(port, host, () => resolve());
      });
      return server.address() as AddressInfo;
    },
    async close() {
      if (server) {
        const s = server;
        server = undefined;
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
    },
  };
}

async function main(): Promise<void> {
  const app = await build();
  const address = await app.listen();
  app.log.info({ address: `${address.address}:${address.port}` }, "switchboard listening");
  const stop = async () => {
    await app.close();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
