/**
 * The harness of the end-to-end call tests: the real app (build()) listening
 * on 127.0.0.1 with the carrier simulator on a ManualScheduler, Connect
 * clients calling as the operator, and real HTTP receivers as the
 * customer's call handlers (`handler`) and state-update endpoint (`states`).
 *
 *   describe.each(testDatabases())("calls on $name", (backend) => {
 *     const database = useTestDatabase(backend);
 *     const harness = callHarness(database);
 *     const { connect, handler, owner, route, serve, runToEnd, createCall } = harness;
 *     ...harness.app, harness.base (set once the beforeAll ran)...
 *   });
 *
 * The clients and receivers it returns are usable objects from the start
 * (they reach the app and the receivers started in beforeAll), so a file
 * can take them apart at describe time.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { DescService, MessageInitShape } from "@bufbuild/protobuf";
import { fromJsonString } from "@bufbuild/protobuf";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { type Call, Call_State, CallSchema, Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { SimulatorAdmin, type SimulatorRouteSchema } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import type { Db } from "../../src/db/client.js";
import { projects } from "../../src/db/schema/index.js";
import type { Logger } from "../../src/log.js";
import { type App, build } from "../../src/server.js";
import { addBlock, blockAllocator, numberingClients, provision } from "../numbering/support.js";
import { bearer, createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "./app.js";
import { TestClock } from "./clock.js";
import { type ReceivedRequest, type Receiver, startReceiver } from "./receiver.js";
import { ManualScheduler } from "./scheduler.js";

/** Call time at the start of every harness. */
export const T0 = "2026-03-01T00:00:00.000Z";

/** The states a call ends in. */
export const TERMINAL = new Set([
  Call_State.COMPLETED,
  Call_State.FAILED,
  Call_State.NOT_ANSWERED,
  Call_State.BUSY,
  Call_State.REJECTED,
]);

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A markup document. */
export const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?><Response>${body}</Response>`;

/** Seconds of a Duration or Timestamp (ms exact). */
export const secondsOf = (d: { seconds: bigint; nanos: number } | undefined): number =>
  d === undefined ? Number.NaN : Number(d.seconds) + d.nanos / 1e9;

/** Seconds between two Timestamps. */
export const between = (
  a: { seconds: bigint; nanos: number } | undefined,
  b: { seconds: bigint; nanos: number } | undefined,
): number => secondsOf(b) - secondsOf(a);

/** The signing key of `project` (`projects/{id}`). */
export async function keyOf(db: Db, project: string): Promise<Buffer> {
  const [row] = await db
    .select({ key: projects.signingKey })
    .from(projects)
    .where(eq(projects.id, project.split("/")[1]!));
  return Buffer.from(row!.key, "base64");
}

/** Checks both signatures of a received request with node:crypto. */
export function expectSigned(req: ReceivedRequest, key: Buffer, url: string, eventType = "CALL"): void {
  expect(req.method).toBe("POST");
  expect(req.headers["x-enfonica-event"]).toBe(eventType);
  const expected = createHmac("sha256", key)
    .update(Buffer.from(url + eventType + req.body, "utf8"))
    .digest();
  const given = Buffer.from(String(req.headers["x-enfonica-signature"]), "base64");
  expect(given.length).toBe(expected.length);
  expect(timingSafeEqual(given, expected)).toBe(true);
  const id = String(req.headers["webhook-id"]);
  const timestamp = String(req.headers["webhook-timestamp"]);
  const standard = createHmac("sha256", key).update(`${id}.${timestamp}.${req.body}`).digest("base64");
  expect(String(req.headers["webhook-signature"]).split(" ")).toContain(`v1,${standard}`);
}

export type RouteInit = Omit<MessageInitShape<typeof SimulatorRouteSchema>, "$typeName" | "prefix">;

export interface CallHarnessOptions {
  /**
   * Configuration besides private webhook destinations, a 2 s webhook
   * timeout and 20 ms polling; a function is called in the beforeAll (after
   * the file's own beforeAll hooks registered earlier).
   */
  env?: NodeJS.ProcessEnv | (() => NodeJS.ProcessEnv);
  /** What route() numbers start with (two digits follow); default +614915702. */
  destinations?: string;
  /**
   * Recordings: runToEnd() also waits for the engine to be idle, and after
   * each test the calls still running are run to their end first.
   */
  drain?: boolean;
  /** The app's logger (default: silent), e.g. a captured one. */
  log?: Logger;
}

export interface CallHarness {
  /** The app (once the beforeAll ran). */
  readonly app: App;
  /** `http://127.0.0.1:{port}` of the app (once the beforeAll ran). */
  readonly base: string;
  /** How many destinations route() made so far. */
  readonly destinations: number;
  scheduler: ManualScheduler;
  nextBlock: () => string;
  /** Calls over Connect JSON (HTTP/1.1). */
  connect: Client<typeof Calls>;
  /** A client of `service` over Connect JSON (HTTP/1.1), or gRPC (HTTP/2). */
  client<S extends DescService>(service: S, protocol?: "connect" | "grpc"): Client<S>;
  /** The call handlers' receiver (200 "ok" again after each test). */
  handler: Receiver;
  /** The state-update receiver. */
  states: Receiver;
  /** A project owning a fresh ACTIVE number; returns the project and the number. */
  owner(): Promise<{ project: string; from: string }>;
  /** A destination of its own with a simulator route. */
  route(init: RouteInit): Promise<string>;
  /** A project with an ACTIVE single-number instance handled by `uris`. */
  single(uris: string[]): Promise<{ project: string; number: string; instance: string }>;
  /** Serves markup by path (a number: that status). */
  serve(documents: Record<string, string | number>): void;
  /** Moves call time forward in small steps (letting real HTTP happen) until the call is over. */
  runToEnd(name: string, maxSeconds?: number): Promise<Call>;
  /** Waits (real time) until the state receiver holds `n` updates; checks their signatures and returns them. */
  stateUpdates(n: number, key: Buffer, url: string): Promise<Call[]>;
  /** Creates a call handled at `path` of the handler receiver, its state updates sent to `/state`. */
  createCall(project: string, from: string, to: string, path?: string, extra?: object): Promise<Call>;
}

/** A Receiver usable before it is started: it forwards to the one `start()` starts. */
function laterReceiver(): Receiver & { start(): Promise<void> } {
  let started: Receiver | undefined;
  const get = () => {
    if (started === undefined) throw new Error("the receiver is not started yet");
    return started;
  };
  return {
    async start() {
      started = await startReceiver();
    },
    get base() {
      return get().base;
    },
    get port() {
      return get().port;
    },
    get requests() {
      return get().requests;
    },
    connections: () => get().connections(),
    closeIdle: () => get().closeIdle(),
    handle: (h) => get().handle(h),
    close: async () => {
      await started?.close();
    },
  };
}

/** A transport usable before the app listens: it forwards to the one `make()` returns then. */
function laterTransport(make: () => Transport | undefined): Transport {
  const get = () => {
    const transport = make();
    if (transport === undefined) throw new Error("the app is not listening yet");
    return transport;
  };
  return {
    unary: (...args) => get().unary(...args),
    stream: (...args) => get().stream(...args),
  };
}

/** Registers the hooks of the harness (in the calling describe) and returns its parts. */
export function callHarness(database: { db: Db }, options: CallHarnessOptions = {}): CallHarness {
  const scheduler = new ManualScheduler(new TestClock(T0));
  const nextBlock = blockAllocator();
  const handler = laterReceiver();
  const states = laterReceiver();
  let app: App | undefined;
  let base: string | undefined;
  let connectTransport: Transport | undefined;
  let grpcTransport: Transport | undefined;
  let destination = 0;
  const transports = {
    connect: laterTransport(() => connectTransport),
    grpc: laterTransport(() => grpcTransport),
  };
  const client = <S extends DescService>(service: S, protocol: "connect" | "grpc" = "connect") =>
    createClient(service, transports[protocol]);
  const connect = client(Calls);
  const running = () => {
    if (app === undefined) throw new Error("the app is not built yet");
    return app;
  };

  beforeAll(async () => {
    const env = typeof options.env === "function" ? options.env() : options.env;
    app = await build({
      db: database.db,
      clock: scheduler.clock,
      scheduler,
      ...(options.log === undefined ? {} : { log: options.log }),
      config: testConfig({
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
        WEBHOOKS_TIMEOUT_MS: "2000",
        WEBHOOKS_POLL_INTERVAL_MS: "20",
        ...env,
      }),
    });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
    connectTransport = createConnectTransport({
      baseUrl: base,
      httpVersion: "1.1",
      interceptors: [bearer(TEST_OPERATOR_TOKEN)],
    });
    grpcTransport = createGrpcTransport({ baseUrl: base, interceptors: [bearer(TEST_OPERATOR_TOKEN)] });
    await handler.start();
    await states.start();
  });
  afterAll(async () => {
    await app?.close();
    await handler.close();
    await states.close();
  });
  afterEach(async () => {
    if (options.drain) {
      // A failed test must not leave its calls running into the next one.
      for (let i = 0; i < 20_000 && running().engine.activeCount > 0; i++) await scheduler.advance(0.1);
      await running().engine.idle();
    }
    handler.requests.length = 0;
    states.requests.length = 0;
    handler.handle((_req, res) => res.end("ok"));
  });

  async function owner(): Promise<{ project: string; from: string }> {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, scheduler.clock);
    const from = await addBlock(c, nextBlock(), 10);
    await provision(c, project, from);
    return { project, from };
  }

  async function route(init: RouteInit): Promise<string> {
    destination++;
    const to = `${options.destinations ?? "+614915702"}${String(destination).padStart(2, "0")}`;
    await createTestClient(SimulatorAdmin, database.db, scheduler.clock).createRoute({
      route: { prefix: to, ...init },
    });
    return to;
  }

  async function single(uris: string[]): Promise<{ project: string; number: string; instance: string }> {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, scheduler.clock);
    const number = await addBlock(c, nextBlock(), 10);
    const instance = await c.instances.createPhoneNumberInstance({
      parent: project,
      phoneNumberInstance: { phoneNumber: { phoneNumber: number }, incomingCallHandlerUris: uris },
    });
    return { project, number, instance: instance.name };
  }

  function serve(documents: Record<string, string | number>): void {
    handler.handle((req, res) => {
      const path = req.path.split("?")[0]!;
      const doc = documents[path];
      if (doc === undefined) {
        res.statusCode = 404;
        res.end("no");
      } else if (typeof doc === "number") {
        res.statusCode = doc;
        res.end("error");
      } else {
        res.setHeader("content-type", "application/xml");
        res.end(doc);
      }
    });
  }

  async function runToEnd(name: string, maxSeconds = 600): Promise<Call> {
    for (let t = 0; t < maxSeconds * 10; t++) {
      const call = await connect.getCall({ name });
      if (TERMINAL.has(call.state) && running().engine.activeCount === 0) {
        if (options.drain) await running().engine.idle();
        return call;
      }
      await scheduler.advance(0.1);
      await sleep(1);
    }
    throw new Error(`call ${name} did not end within ${maxSeconds} s of call time`);
  }

  async function stateUpdates(n: number, key: Buffer, url: string): Promise<Call[]> {
    for (let i = 0; i < 500 && states.requests.length < n; i++) await sleep(10);
    await sleep(50);
    expect(states.requests).toHaveLength(n);
    return states.requests.map((r) => {
      expectSigned(r, key, url, "CALL_STATE_UPDATE");
      return fromJsonString(CallSchema, r.body);
    });
  }

  function createCall(project: string, from: string, to: string, path = "/start", extra = {}) {
    return connect.createCall({
      parent: project,
      call: {
        to,
        from,
        labels: { team: "test" },
        options: {
          handlerUris: [`${handler.base}${path}`],
          stateUpdateUri: `${states.base}/state`,
          ...extra,
        },
      },
    });
  }

  return {
    get app() {
      return running();
    },
    get base() {
      if (base === undefined) throw new Error("the app is not listening yet");
      return base;
    },
    get destinations() {
      return destination;
    },
    scheduler,
    nextBlock,
    connect,
    client,
    handler,
    states,
    owner,
    route,
    single,
    serve,
    runToEnd,
    stateUpdates,
    createCall,
  };
}
