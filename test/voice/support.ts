/** Helpers shared by the SIP domain and alias tests. */
import { randomBytes } from "node:crypto";
import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { createInterceptors } from "../../src/api/interceptors.js";
import { Authenticator } from "../../src/auth/interceptor.js";
import { DbCredentialStore } from "../../src/auth/store.js";
import type { Clock } from "../../src/clock.js";
import type { Db } from "../../src/db/client.js";
import { createLogger } from "../../src/log.js";
import { buildServices } from "../../src/services.js";
import { bearer, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";

let counter = 0;

/** A fresh SIP domain id (2 to 30 characters): ids are global, so every test takes its own. */
export function newSipDomainId(prefix = "sd"): string {
  counter++;
  return `${prefix}-${counter.toString(36)}-${randomBytes(3).toString("hex")}`.slice(0, 30);
}

/**
 * An in-process client like createTestClient's, with configuration from
 * `env` (SIP_BASE_DOMAIN, COLLAB_*), calling as `token`.
 */
export function configuredClient<S extends DescService>(
  service: S,
  db: Db,
  clock: Clock,
  env: NodeJS.ProcessEnv,
  token: string = TEST_OPERATOR_TOKEN,
): Client<S> {
  const config = testConfig(env);
  const log = createLogger("silent");
  const services = buildServices({ config, clock, log, db });
  const auth = new Authenticator({ operatorToken: TEST_OPERATOR_TOKEN, store: new DbCredentialStore(db) });
  const transport = createRouterTransport(
    (router) => {
      for (const s of services) router.service(s.desc, s.impl);
    },
    { router: { interceptors: createInterceptors(log, auth) }, transport: { interceptors: [bearer(token)] } },
  );
  return createClient(service, transport);
}
