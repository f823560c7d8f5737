/**
 * Idempotent creates. A create carrying an `Idempotency-Key` header (REST)
 * or `idempotency-key` metadata (gRPC, gRPC-Web, Connect) is done at most
 * once per project and key for IDEMPOTENCY_KEY_TTL_SECONDS (24 h):
 *
 * - The key is recorded by the create itself, in the transaction that
 *   creates the resource (`recordCreated`, scope.ts), with the method, a
 *   hash of the request and the resource's name; the response is added
 *   right after the commit.
 * - A retry with the same key and the same request (same method, same
 *   message: transports may differ) gets the original response back
 *   without the work being done again, with the response header
 *   `Idempotent-Replayed: true`. When the process died between the commit
 *   and storing the response, the replay reads the resource back with the
 *   service's Get method (so it shows the resource as it is now).
 * - The same key with another request or method: FAILED_PRECONDITION,
 *   ErrorInfo reason IDEMPOTENCY_KEY_REUSED.
 * - Concurrent requests with one key: the second waits for the first (in
 *   this process by a per-key queue; across replicas on the key's primary
 *   key, whose insert waits for the first transaction), then replays its
 *   result; work the second did is rolled back with its transaction.
 * - Failed creates record nothing (their transaction rolled back): a retry
 *   with the key runs again.
 * - A malformed key is INVALID_ARGUMENT naming `idempotency-key`.
 *
 * Only the methods of `IDEMPOTENT_METHODS` take keys; on every other method
 * the header is ignored. See docs/idempotency-and-limits.md.
 */
import { createHash } from "node:crypto";
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescService,
  fromBinary,
  isMessage,
  type JsonValue,
  type Message,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import {
  Code,
  type ConnectError,
  createContextKey,
  createHandlerContext,
  type HandlerContext,
  type Interceptor,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { projectOf, readPath } from "../../auth/interceptor.js";
import type { Clock } from "../../clock.js";
import type { IdempotencyKeyRow } from "../../db/schema/index.js";
import type { Logger } from "../../log.js";
import { invalidArgument, rpcError } from "../errors.js";
import { procedureOf } from "../procedure.js";
import type { IdempotencyRepository } from "./repository.js";
import { type IdempotencyScope, idempotencyScope } from "./scope.js";

/** The header (gRPC metadata key) carrying the key. */
export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";
/** Set on replayed responses. */
export const REPLAYED_HEADER = "idempotent-replayed";
/** 1 to 255 characters: letters, digits and `._:~+/=-` (UUIDs, ULIDs, base64 all fit). */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9._:~+/=-]{1,255}$/;
/** Default of IDEMPOTENCY_KEY_TTL_SECONDS: 24 hours. */
export const DEFAULT_IDEMPOTENCY_TTL_SECONDS = 24 * 3600;

/** The creates that take an idempotency key (the request's `parent` names the project). */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set([
  "enfonica.numbering.v1beta1.RegulatoryListings/CreateRegulatoryListing",
  "enfonica.numbering.v1beta1.PhoneNumberInstances/CreatePhoneNumberInstance",
  "enfonica.voice.v1beta1.SipDomains/CreateSipDomain",
  "enfonica.voice.v1beta1.Aliases/CreateAlias",
  "enfonica.voice.v1beta1.Calls/CreateCall",
  "enfonica.messaging.v1.Unsubscribers/CreateUnsubscriber",
  "enfonica.messaging.v1.Messages/CreateMessage",
]);

/** The message a replayed create answers with (set by the interceptor, read by withReplay). */
const replayKey = createContextKey<Message | undefined>(undefined, { description: "idempotent replay" });

/**
 * `services` with the methods of IDEMPOTENT_METHODS answering with the
 * replayed message when the interceptor set one, without running the create.
 */
export function withReplay<T extends { desc: DescService; impl: object }>(services: readonly T[]): T[] {
  return services.map((s) => {
    const methods = s.desc.methods.filter((m) => IDEMPOTENT_METHODS.has(`${s.desc.typeName}/${m.name}`));
    if (methods.length === 0) return s;
    const impl: Record<string, unknown> = { ...s.impl };
    for (const m of methods) {
      const original = impl[m.localName] as ((req: unknown, ctx: HandlerContext) => unknown) | undefined;
      if (original === undefined) continue;
      impl[m.localName] = (req: unknown, ctx: HandlerContext) =>
        ctx.values.get(replayKey) ?? original(req, ctx);
    }
    return { ...s, impl };
  });
}

/** Reads a resource back by name with the Get method of `service` (the replay after a crash). */
export type ReadBack = (req: UnaryRequest, get: DescMethod, name: string) => Promise<Message>;

export interface IdempotencyOptions {
  repository: IdempotencyRepository;
  clock: Clock;
  log: Logger;
  readBack: ReadBack;
  ttlSeconds?: number;
  /** How often (at most) a keyed request also purges expired keys. Default 10 minutes. */
  purgeIntervalMs?: number;
  /**
   * Test-only fault point (FAULT_KILL_AFTER_CREATE_COMMIT): the process
   * SIGKILLs itself right after a keyed create of this method committed,
   * before the response is stored or sent. Unset in production.
   */
  killAfterCommit?: string | undefined;
}

/** The key of a request header value, or INVALID_ARGUMENT naming the header. */
export function parseIdempotencyKey(raw: string): string {
  // RFC 8941 sf-string form (`"..."`), as the IETF draft writes it, is accepted too.
  const key = raw.length >= 2 && raw.startsWith('"') && raw.endsWith('"') ? raw.slice(1, -1) : raw;
  if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
    throw invalidArgument(
      [
        {
          field: IDEMPOTENCY_KEY_HEADER,
          description: "must be 1 to 255 characters of letters, digits and ._:~+/=- (a UUID, for example)",
          reason: "idempotency_key.format",
        },
      ],
      "the Idempotency-Key header (idempotency-key metadata) must be 1 to 255 characters of letters, digits and ._:~+/=-",
    );
  }
  return key;
}

/** JSON with object keys sorted: the same message gives the same text whatever its map order. */
function canonical(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, JsonValue>)[k]!)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** SHA-256 of the method and the request in canonical form. */
export function requestHash(method: string, desc: DescMessage, message: Message): string {
  const hash = createHash("sha256").update(method).update("\n");
  try {
    hash.update(canonical(toJson(desc, message)));
  } catch {
    hash.update(toBinary(desc, message)); // e.g. an Any of an unknown type
  }
  return hash.digest("hex");
}

function reused(row: IdempotencyKeyRow, method: string): ConnectError {
  return rpcError(
    Code.FailedPrecondition,
    "IDEMPOTENCY_KEY_REUSED",
    row.method === method
      ? "this Idempotency-Key was already used with a different request: use a new key for a new request"
      : `this Idempotency-Key was already used with ${row.method}: use a new key for a new request`,
    { header: IDEMPOTENCY_KEY_HEADER, method: row.method },
  );
}

/** The Get method of the service of a create (`GetCall` for `CreateCall`'s `Call`). */
function getMethodOf(req: UnaryRequest): DescMethod | undefined {
  return req.service.methods.find(
    (m) => m.name === `Get${req.method.output.name}` && m.input.fields.some((f) => f.name === "name"),
  );
}

export function createIdempotencyInterceptor(options: IdempotencyOptions): Interceptor {
  const { repository, clock, log } = options;
  const ttlMs = (options.ttlSeconds ?? DEFAULT_IDEMPOTENCY_TTL_SECONDS) * 1000;
  const purgeIntervalMs = options.purgeIntervalMs ?? 10 * 60 * 1000;
  let nextPurge = 0;
  /** Per project and key: the tail of the requests queued in this process. */
  const queues = new Map<string, Promise<void>>();

  function serialized<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const previous = queues.get(id) ?? Promise.resolve();
    const run = previous.then(fn);
    const tail = run.then(
      () => {},
      () => {},
    );
    queues.set(id, tail);
    void tail.then(() => {
      if (queues.get(id) === tail) queues.delete(id);
    });
    return run;
  }

  async function purge(now: Date): Promise<void> {
    if (now.getTime() < nextPurge) return;
    nextPurge = now.getTime() + purgeIntervalMs;
    try {
      const n = await repository.purgeExpired(now, 1000);
      if (n > 0) log.debug({ purged: n }, "expired idempotency keys purged");
    } catch (err) {
      log.warn({ err }, "purging expired idempotency keys failed");
    }
  }

  async function replay(
    next: (req: UnaryRequest) => Promise<UnaryResponse>,
    req: UnaryRequest,
    row: IdempotencyKeyRow,
    scope: IdempotencyScope,
  ) {
    if (row.method !== scope.method || row.requestHash !== scope.requestHash) throw reused(row, scope.method);
    let message: Message;
    if (row.response !== null) {
      message = fromBinary(req.method.output, Buffer.from(row.response, "base64"));
    } else {
      const get = getMethodOf(req);
      if (get === undefined) throw new Error(`no Get method to read ${row.resourceName} back`);
      message = await options.readBack(req, get, row.resourceName);
    }
    // Through the service (withReplay answers with `message`), so the
    // protocol's own response headers stay as they are.
    req.contextValues.set(replayKey, message);
    const res = await next(req);
    res.header.set(REPLAYED_HEADER, "true");
    return res;
  }

  return (next) => (req) => {
    // Synchronous pass-through (no promise of its own) for what takes no key.
    if (req.stream) return next(req);
    const method = procedureOf(req.method);
    if (!IDEMPOTENT_METHODS.has(method)) return next(req);
    const raw = req.header.get(IDEMPOTENCY_KEY_HEADER);
    if (raw === null) return next(req);
    return keyed(next, req, method, raw);
  };

  async function keyed(
    next: Parameters<Interceptor>[0],
    req: UnaryRequest,
    method: string,
    raw: string,
  ): ReturnType<ReturnType<Interceptor>> {
    const key = parseIdempotencyKey(raw);
    const unary = next as (req: UnaryRequest) => Promise<UnaryResponse>;
    const projectId = projectOf(readPath(req.method.input, req.message, "parent"));
    // A malformed parent is the handler's INVALID_ARGUMENT.
    if (projectId === undefined) return next(req);
    const now = clock.now();
    const scope: IdempotencyScope = {
      projectId,
      key,
      method,
      requestHash: requestHash(method, req.method.input, req.message),
      createTime: now,
      expireTime: new Date(now.getTime() + ttlMs),
      recorded: false,
    };
    return serialized(`${projectId}\u0000${key}`, async () => {
      await purge(now);
      const existing = await repository.findLive(projectId, key, clock.now());
      if (existing !== undefined) return replay(unary, req, existing, scope);
      let res: Awaited<ReturnType<typeof next>>;
      try {
        res = await idempotencyScope.run(scope, () => next(req));
      } catch (err) {
        // Another request with this key may have won a race (this one's
        // work rolled back, or failed on what the winner created).
        const winner = await repository.findLive(projectId, key, clock.now()).catch(() => undefined);
        if (winner !== undefined) return replay(unary, req, winner, scope);
        throw err;
      }
      if (options.killAfterCommit === method) process.kill(process.pid, "SIGKILL");
      if (res.stream) return res;
      try {
        const response = Buffer.from(toBinary(req.method.output, res.message)).toString("base64");
        if (scope.recorded) {
          await repository.saveResponse(projectId, key, scope.requestHash, response);
        } else {
          // A create that does not record keys itself: recorded after the fact.
          const name = readPath(req.method.output, res.message, "name");
          await repository.insertCompleted({ ...scope, resourceName: name, response });
        }
      } catch (err) {
        // The key is committed with the resource: a replay reads it back.
        log.warn({ err, method }, "storing an idempotent response failed");
      }
      return res;
    });
  }
}

/**
 * A ReadBack calling the Get method's implementation among `services`
 * directly (the caller was authorized for the create of that resource).
 */
export function readBackFrom(
  // biome-ignore lint/suspicious/noExplicitAny: a heterogeneous list of implementations
  services: ReadonlyArray<{ desc: { typeName: string }; impl: Record<string, any> }>,
): ReadBack {
  return async (req, get, name) => {
    const entry = services.find((s) => s.desc.typeName === req.service.typeName);
    const impl = entry?.impl[get.localName] as
      | ((request: Message, context: ReturnType<typeof createHandlerContext>) => Promise<unknown>)
      | undefined;
    if (impl === undefined) throw new Error(`${req.service.typeName}/${get.name} is not implemented`);
    const context = createHandlerContext({
      service: req.service,
      method: get,
      protocolName: "idempotency-replay",
      requestMethod: "POST",
      url: req.url,
      requestHeader: req.header,
      contextValues: req.contextValues,
    });
    const result = await impl(create(get.input, { name } as never), context);
    return isMessage(result, get.output) ? result : create(get.output, result as never);
  };
}
