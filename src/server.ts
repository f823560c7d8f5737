/**
 * build() assembles the application from configuration and injected
 * dependencies; it listens when asked (`app.listen()`). The process around
 * it (signals, stop, the first-start hint) is src/main.ts.
 */
import { setMaxListeners } from "node:events";
import type { AddressInfo } from "node:net";
import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";
import { sql } from "drizzle-orm";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import * as reflectionV1 from "../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflectionV1alpha from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { ServiceAccountKeysRepository } from "./admin/service-account-keys-repository.js";
import { hardeningInterceptors } from "./api/hardening.js";
import { withReplay } from "./api/idempotency/interceptor.js";
import { createInterceptors } from "./api/interceptors.js";
import type { MonotonicClock } from "./api/rate-limit/token-bucket.js";
import {
  ALL_KEYS,
  CachingCredentialStore,
  CREDENTIALS_CHANNEL,
  type CredentialCacheOptions,
  credentialChangesOf,
} from "./auth/credential-cache.js";
import { Authenticator, type Policies } from "./auth/interceptor.js";
import { type OperatorToken, resolveOperatorToken } from "./auth/operator-token.js";
import { METHOD_POLICIES } from "./auth/permissions.js";
import { DbCredentialStore } from "./auth/store.js";
import { type Clock, systemClock } from "./clock.js";
import { type Config, loadConfig } from "./config.js";
import { type Database, type Db, migrateDb, openDatabase } from "./db/client.js";
import { type ChangeFeed, followChanges } from "./db/listen.js";
import { enqueueKicker, listenForWebhooks, newAnnouncer, webhookNotifier } from "./events/listener.js";
import { WebhookWorker } from "./events/worker.js";
import { createLogger, type Logger } from "./log.js";
import { sharedSpeech } from "./media/speech/index.js";
import { OptOuts } from "./messaging/messages/opt-out.js";
import { optOutRoute } from "./messaging/messages/opt-out-route.js";
import { numberingDomains } from "./numbering/domains.js";
import { seedDemoInventory } from "./numbering/inventory/demo.js";
import { AccessTokensRepository } from "./oauth/access-tokens-repository.js";
import { TokenIssuer } from "./oauth/token-issuer.js";
import { tokenRoute } from "./oauth/token-route.js";
import { TokenUrl } from "./oauth/token-url.js";
import { UsedAssertionsRepository } from "./oauth/used-assertions-repository.js";
import { markRest, withAccessLog } from "./observability/access-log.js";
import { addGaugeSource, instrumentDrizzle } from "./observability/metrics.js";
import { metricsRoute } from "./observability/metrics-route.js";
import { webhookQueueDepth } from "./observability/queue-depth.js";
import { startTracing } from "./observability/tracing.js";
import { BlobSharingCheck } from "./recordings/blob-sharing.js";
import { openBlobStore } from "./recordings/blob-store.js";
import { createRecordings, recordingAudioRoute } from "./recordings/index.js";
import { buildServices, createCallEngine, createMessageNetwork, type ServiceEntry } from "./services.js";
import type { Scheduler } from "./telephony/scheduler.js";
import { type SipEdge, startSipEdge } from "./telephony/sip-edge/edge.js";
import { createConsoleHttp } from "./transport/console.js";
import { withCors } from "./transport/cors.js";
import { chainFallbacks, type Fallback } from "./transport/fallback.js";
import { withGrpcMessageEncoding } from "./transport/grpc-message.js";
import { createHealthHttp, createHealthService, HealthStatus } from "./transport/health.js";
import { createOnePortServer, type OnePortServer } from "./transport/one-port.js";
import { createOpenApiHttp } from "./transport/openapi.js";
import { createReflectionServices } from "./transport/reflection.js";
import { withEarlyAnswers } from "./transport/request-body.js";
import { createRestHandler, writeNotFound } from "./transport/rest/index.js";
import { rpcUnimplemented, withClientErrors } from "./transport/rpc-errors.js";
import type { NodeHandlerFn } from "./transport/types.js";
import type { CallEngine } from "./voice/calls/engine.js";

export interface App {
  config: Config;
  /** The operator token in force, and whether this start generated it. */
  operatorToken: OperatorToken;
  log: Logger;
  services: ServiceEntry[];
  /** The call engine (calls in flight end FAILED SERVICE_SHUTDOWN on close). */
  engine: CallEngine;
  /** The webhook delivery worker; running unless ROLE=api. */
  webhooks: WebhookWorker | undefined;
  /** The credential cache of authentication, and whether changes through other replicas reach it now. */
  credentials: { cache: CachingCredentialStore; live(): boolean };
  /** The request handler of the one port: Connect, gRPC, gRPC-Web, REST, health. */
  handler: NodeHandlerFn;
  /** Starts listening; resolves with the bound address. */
  listen(port?: number, host?: string): Promise<AddressInfo>;
  /** Starts the SIP edge's listeners (config.sip; src/telephony/sip-edge/edge.ts); close() stops them. */
  listenSip(): Promise<SipEdge>;
  /** Stops listening and releases every resource. */
  close(): Promise<void>;
}

export interface BuildOptions {
  config?: Config;
  clock?: Clock;
  log?: Logger;
  /** Extra condition for `GET /readyz` (the database answers, for instance). */
  readiness?: () => Promise<boolean>;
  /** Replaces the services buildServices() would build (tests). */
  services?: ServiceEntry[];
  /** Policies for methods of `services` that the method table does not know (tests). */
  extraPolicies?: Policies;
  /**
   * The database to use; build() migrates it but close() leaves it open.
   * Without one, build() opens (and close() closes) the database the config
   * names.
   */
  db?: Db;
  /** Where spans go instead of the OTLP exporter (tests: an InMemorySpanExporter); turns tracing on. */
  spanExporter?: SpanExporter;
  /**
   * Timers of the carrier simulator and the call engine; by default real
   * timers at SIMULATOR_TIME_SCALE on `clock` (tests pass a ManualScheduler).
   */
  scheduler?: Scheduler;
  /** Time of the rate limits' token buckets; by default performance.now() (tests inject one). */
  rateLimitClock?: MonotonicClock;
  /** The credential cache's lifetime and size (tests); `live` is always the change listener's. */
  credentialCache?: Omit<CredentialCacheOptions, "live">;
  /** The built console served at /console/ (tests build one); by default dist/console/. */
  consoleDir?: string;
}

export async function build(options: BuildOptions = {}): Promise<App> {
  const config = options.config ?? loadConfig();
  const log = options.log ?? createLogger(config.logLevel, { bufferBytes: config.logBufferBytes });
  const clock = options.clock ?? systemClock;
  instrumentDrizzle();
  // Recording audio's store (BLOB_STORE), checked first: a bucket that cannot be used stops the start.
  const started0 = performance.now();
  const blobs = await openBlobStore(config.recordings);
  log.info({ ...blobs.describe, ms: Math.round(performance.now() - started0) }, "blob store opened");
  let stopTracing: Awaited<ReturnType<typeof startTracing>>;
  try {
    stopTracing = await startTracing(config.tracing, options.spanExporter);
  } catch (err) {
    blobs.close();
    throw err;
  }
  let owned: Database | undefined;
  let db = options.db;
  // Start-up steps are logged at info with their duration (an operator
  // watching a first start sees what the seconds go to).
  const step = async <T>(what: string, fields: object, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await run();
    log.info({ ...fields, ms: Math.round(performance.now() - started) }, what);
    return result;
  };
  if (db === undefined) {
    const where =
      config.databaseUrl === undefined
        ? { database: "pglite", dataDir: config.dataDir, durable: config.embeddedDatabaseDurable }
        : { database: "postgres", host: databaseHost(config.databaseUrl) };
    const started = performance.now();
    owned = await openDatabase(config);
    log.info(
      {
        ...where,
        ...(owned.created ? { created: owned.created } : {}),
        ms: Math.round(performance.now() - started),
      },
      "database opened",
    );
    if (owned.removed !== undefined) {
      log.warn({ removed: owned.removed }, "removed what an interrupted first start had left");
    }
    db = owned.db;
  }
  try {
    const opened = owned;
    if (opened) await step("migrations applied", {}, () => opened.migrate());
    else if (db) await migrateDb(db);
    // A new embedded database starts with a demo inventory of fictional
    // numbers (src/numbering/inventory/demo.ts; the build's template has it
    // already, so this only checks). Later starts leave the inventory to the
    // operator: what they removed stays removed, and a restart costs nothing.
    if (opened?.driver === "pglite" && opened.created !== undefined) {
      const seeded = await step("demo inventory checked", {}, () =>
        seedDemoInventory(numberingDomains(opened.db, clock, config).inventory),
      );
      if (seeded > 0) log.info({ numbers: seeded }, "demo inventory added (fictional numbers only)");
    }
  } catch (err) {
    await owned?.close();
    blobs.close();
    throw err;
  }
  const database = db!;
  // Background work: webhook delivery (ROLE=worker or all); started below.
  const webhooks =
    config.role === "api"
      ? undefined
      : new WebhookWorker({ db: database, clock, config: config.webhooks, log });
  // Other replicas' workers hear of committed enqueues over NOTIFY when this one's cannot take
  // them (src/events/listener.ts). Its id in the payload: this replica's listener (below) ignores
  // its own announcements.
  const announcer = newAnnouncer();
  const notifyWebhooks = owned?.driver === "pglite" ? undefined : webhookNotifier(database, log, announcer);
  const kickWebhooks = enqueueKicker(webhooks, notifyWebhooks);
  // Recordings: shared by the API, the audio download route and the engine.
  const recordings = createRecordings({ config, clock, log, db: database, kickWebhooks, blobs: blobs.store });
  // The call engine drives the calls created through this process's API.
  const engine = createCallEngine(
    {
      config,
      clock,
      log,
      db: database,
      kickWebhooks,
      recordings,
      ...(webhooks === undefined ? {} : { webhookLeases: webhooks }),
    },
    {
      rememberSigningKeys: true,
      // The embedded database is this process's alone: nobody else can change a key.
      listenForChanges: owned?.driver !== "pglite",
      ...(options.scheduler === undefined ? {} : { scheduler: options.scheduler }),
    },
  );
  // (Not on the embedded database: one process's, so there is no other replica.)
  const blobSharing =
    config.recordings.blobStore === "filesystem" && owned?.driver !== "pglite"
      ? new BlobSharingCheck({
          db: database,
          log,
          blobDir: config.recordings.blobDir,
          engineId: engine.id,
          heartbeatSeconds: config.engineHeartbeatSeconds,
        })
      : undefined;
  // The token endpoint's public URL: key files carry it, assertions must name it.
  const tokenUrl = new TokenUrl(config);
  // The origin of opt-out links: RECORDING_LINK_BASE_URL, else the address listened on (set in listen()).
  let publicBaseUrl = config.recordings.linkBaseUrl;
  // Outgoing messages' simulated network (timers on the same scheduler as calls).
  const messageNetwork = createMessageNetwork({
    config,
    clock,
    log,
    db: database,
    kickWebhooks,
    ...(options.scheduler === undefined ? {} : { scheduler: options.scheduler }),
  });
  const services =
    options.services ??
    buildServices({
      config,
      clock,
      log,
      db: database,
      kickWebhooks,
      engine,
      recordings,
      publicBaseUrl: () => publicBaseUrl,
      messageNetwork,
      tokenUrl,
    });
  const operatorToken = resolveOperatorToken(config);
  // Credentials are cached briefly; a change through any replica reaches every cache at once.
  let credentialFeed: ChangeFeed | undefined;
  const credentialsLive = () => credentialFeed?.live() ?? true;
  const credentials = new CachingCredentialStore(new DbCredentialStore(database), {
    ...options.credentialCache,
    live: credentialsLive,
  });
  // This process's changes arrive after each commit; other replicas' over
  // LISTEN, a connection of its own: a server's. The embedded database is one
  // process with a single session (its thread takes one connection): no LISTEN.
  credentialFeed = followChanges(database, {
    changes: credentialChangesOf(database),
    channel: CREDENTIALS_CHANNEL,
    invalidate: (id) => credentials.invalidate(id),
    log,
    what: "credential change listener",
    lostMessage: "credential change listener disconnected: not caching credentials until it is back",
    all: ALL_KEYS,
    listen: owned?.driver !== "pglite",
  });
  const authenticator = new Authenticator({ operatorToken: operatorToken.token, store: credentials, clock });
  // Service accounts exchange signed assertions for access tokens (src/oauth/).
  const tokenIssuer = new TokenIssuer({
    keys: new ServiceAccountKeysRepository(database),
    tokens: new AccessTokensRepository(database),
    assertions: new UsedAssertionsRepository(database),
    clock,
    tokenUrl: () => tokenUrl.url,
    accessTokenTtlSeconds: config.oauth.accessTokenTtlSeconds,
    services: new Set(services.map((s) => s.desc.typeName)),
  });

  const policies = { ...METHOD_POLICIES, ...options.extraPolicies };
  const interceptors: Interceptor[] = createInterceptors(log, authenticator, policies, {
    ...hardeningInterceptors(
      { config, clock, log, db: database, services, policies },
      options.rateLimitClock,
    ),
    allowPrivateDestinations: config.webhooks.allowPrivateDestinations,
  });
  // Standard services of the port: health (every served name SERVING) and
  // reflection (listing everything on the router, itself included).
  const reflection = createReflectionServices([...services.map((s) => s.desc), Health]);
  const health = new HealthStatus(reflection.index.serviceNames);
  // Aborted on close(), after the grace period: long-running handlers
  // (streams) see ctx.signal abort. Only services with a streaming method get
  // it: connect links every call's signal to it with a listener, and adding
  // a listener to an AbortSignal walks the ones already there, so one signal
  // shared by every unary call in flight made each call pay for all the
  // others (5 µs a call at 512 in flight). A unary call still in flight
  // when the grace period ends is aborted by its stream's close instead.
  const shutdown = new AbortController();
  setMaxListeners(0, shutdown.signal);
  const handlerOptions = (desc: DescService) =>
    desc.methods.some((m) => m.methodKind !== "unary") ? { shutdownSignal: shutdown.signal } : undefined;
  const routes = (router: ConnectRouter) => {
    // Creates answer replays of idempotent requests (src/api/idempotency/).
    for (const s of withReplay(services)) router.service(s.desc, s.impl, handlerOptions(s.desc));
    router.service(Health, createHealthService(health), handlerOptions(Health));
    router.service(
      reflectionV1.ServerReflection,
      reflection.v1,
      handlerOptions(reflectionV1.ServerReflection),
    );
    router.service(
      reflectionV1alpha.ServerReflection,
      reflection.v1alpha,
      handlerOptions(reflectionV1alpha.ServerReflection),
    );
  };
  // Requests for no RPC path go down this chain: each link answers (returns
  // true) or passes (returns false); nobody answering means 404.
  const fallbacks: Fallback[] = [
    // GET /healthz, /readyz (ready when the database answers)
    createHealthHttp(health, {
      readiness: options.readiness ?? (() => databaseAnswers(database)),
      ...(blobSharing === undefined ? {} : { details: () => blobSharing.details() }),
    }),
    // GET /openapi.json, /admin/openapi.json and the reference page /docs (no credentials)
    createOpenApiHttp(),
    // GET /console/ (the browser app) and GET / from a browser (src/transport/console.ts)
    createConsoleHttp(options.consoleDir === undefined ? {} : { dir: options.consoleDir }),
    // GET /metrics (Prometheus; the operator token)
    metricsRoute(operatorToken.token),
    // GET signed recording audio links (src/recordings/links.ts)
    recordingAudioRoute(recordings),
    // POST /oauth2/token: service accounts' JWT-bearer grant (src/oauth/)
    tokenRoute({ issuer: tokenIssuer, tokenPath: () => tokenUrl.path, log }),
    // GET / POST /u/{token}: opt-out links of messages (src/messaging/messages/opt-out-route.ts)
    optOutRoute(new OptOuts(database, clock)),
    // google.api.http paths, through the same services and interceptors
    markRest(
      createRestHandler({ services, routes, interceptors, log, maxBodyBytes: config.maxRequestBytes }),
    ),
    // gRPC, gRPC-Web and Connect calls of procedures not served: UNIMPLEMENTED
    rpcUnimplemented,
    (req, res) => {
      writeNotFound(req, res); // 404 in the REST error shape
      return true;
    },
  ];
  const handler = withAccessLog(
    withCors(
      withEarlyAnswers(
        withGrpcMessageEncoding(
          connectNodeAdapter({
            // Undecodable messages are INVALID_ARGUMENT, not INTERNAL (rpc-errors.ts).
            routes: withClientErrors(routes, config.maxRequestBytes),
            interceptors,
            // One limit on every protocol, decompressed size included (REST: above).
            readMaxBytes: config.maxRequestBytes,
            fallback: chainFallbacks(fallbacks, {
              onError: (err, req) => log.error({ err, url: req.url }, "fallback handler failed"),
            }),
          }),
        ),
        config.maxRequestBytes,
      ),
      { allowedOrigins: config.corsAllowedOrigins },
    ),
    log,
  );
  const removeGauges = addGaugeSource({
    activeCalls: () => engine.activeCount,
    webhookQueue: () => webhookQueueDepth(database),
  });

  // Registers the engine and ends the calls of engines that died (liveness.ts).
  await engine.begin();
  // On the filesystem store: a warning (log, /readyz) when another replica does not share BLOB_DIR.
  await blobSharing
    ?.start()
    .catch((err: unknown) =>
      log.warn({ err, blobDir: config.recordings.blobDir }, "could not check whether BLOB_DIR is shared"),
    );
  // Takes over outgoing messages a stopped process left on their way (network.ts).
  if (config.role !== "worker") {
    const resumed = await messageNetwork.resume();
    if (resumed > 0) log.info({ messages: resumed }, "in-flight messages resumed");
  }
  webhooks?.start();
  // Enqueues committed through other replicas wake this worker over LISTEN
  // (src/events/listener.ts); the embedded database has no other replica.
  const webhookListener =
    webhooks === undefined || owned?.driver === "pglite"
      ? undefined
      : listenForWebhooks(database, () => webhooks.kick(), log, announcer);

  let server: OnePortServer | undefined;
  let sipEdge: SipEdge | undefined;
  return {
    config,
    operatorToken,
    log,
    services,
    engine,
    webhooks,
    credentials: { cache: credentials, live: credentialsLive },
    handler,
    async listen(port = config.port, host = config.host) {
      if (server) throw new Error("already listening");
      const s = createOnePortServer({
        handler,
        tls: config.tls,
        onError: (err) => log.error({ err }, "listening socket error"),
      });
      const address = await s.listen(port, host);
      tokenUrl.listeningOn(address.address, address.port);
      server = s;
      if (publicBaseUrl === "") {
        const h = address.family === "IPv6" ? `[${address.address}]` : address.address;
        publicBaseUrl = `${config.tls ? "https" : "http"}://${h}:${address.port}`;
      }
      return address;
    },
    async listenSip() {
      if (sipEdge) throw new Error("SIP is already listening");
      sipEdge = await startSipEdge({
        config,
        db: database,
        clock,
        log,
        operatorToken: operatorToken.token,
        replicaId: engine.id,
        engine,
        speech: sharedSpeech(),
        // As for the credential cache above: no LISTEN on the embedded database (one session).
        listenForChanges: owned?.driver !== "pglite",
      });
      return sipEdge;
    },
    async close() {
      // Health watchers hear NOT_SERVING; in-flight requests get the grace
      // period; whatever still runs after that is told to stop.
      health.shutdown();
      const s = server;
      server = undefined;
      const edge = sipEdge;
      sipEdge = undefined;
      try {
        await edge?.close();
        await s?.close();
      } finally {
        shutdown.abort();
        removeGauges();
        await engine.stop();
        await blobSharing?.stop().catch(() => {});
        await messageNetwork.stop();
        await webhookListener?.close();
        await webhooks?.stop();
        await credentialFeed.close();
        await owned?.close();
        owned = undefined;
        blobs.close();
        await stopTracing?.();
      }
    },
  };
}

/** The host (and port) of a database URL, for logs: never its credentials. */
function databaseHost(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? `:${u.port}` : ""}${u.pathname}`;
  } catch {
    return "(unparseable DATABASE_URL)";
  }
}

/** Readiness: the database answers a trivial query. */
async function databaseAnswers(db: Db): Promise<boolean> {
  try {
    await db.execute(sql`select 1`);
    return true;
  } catch {
    return false;
  }
}
