/**
 * Authentication and authorization for every method on every transport
 * (REST reaches the same interceptors). Order: the method's policy, the
 * credential (UNAUTHENTICATED when missing, unknown or disabled), then the
 * permission on every project the request names (PERMISSION_DENIED) — all
 * before any lookup of the resource, so a caller without the permission
 * learns nothing about whether it exists.
 *
 * Streaming methods (Streams.StreamCall; reflection is public) name their
 * project in their first message, which arrives after the handler starts:
 * the credential is checked at once, and the permission when the first
 * message arrives, before the handler sees it (`guardFirst`), so a denied
 * stream gets PERMISSION_DENIED before anything else.
 */
import { timingSafeEqual } from "node:crypto";
import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { create, getOption } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { resource } from "../../gen/google/api/resource_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { clip, ERROR_DOMAIN, MAX_ECHO_CHARS, notFound } from "../api/errors.js";
import { procedureOf } from "../api/procedure.js";
import { type Clock, systemClock } from "../clock.js";
import { accessTokenIdOf } from "../oauth/access-token-format.js";
import type { StoredAccessToken } from "../oauth/access-tokens-repository.js";
import { expandBinding, METHOD_POLICIES, type MethodPolicy } from "./permissions.js";
import { hashSecret, keyIdOf, safeEqual } from "./secrets.js";

export type Principal =
  | { kind: "operator" }
  | { kind: "apiKey"; keyId: string; grants: ReadonlyMap<string, ReadonlySet<string>> }
  | {
      kind: "serviceAccount";
      accountId: string;
      /** The key the access token was obtained with. */
      keyId: string;
      grants: ReadonlyMap<string, ReadonlySet<string>>;
      /** The services (`package.Service`) the access token's scope names: the only ones it may call. */
      services: ReadonlySet<string>;
    };

/** The credential's resource name, for logs and per-credential rate limits. */
export function credentialName(principal: Principal): string {
  switch (principal.kind) {
    case "operator":
      return "operator";
    case "apiKey":
      return `apiKeys/${principal.keyId}`;
    case "serviceAccount":
      return `serviceAccounts/${principal.accountId}`;
  }
}

export interface StoredKey {
  secretHash: string;
  disabled: boolean;
  bindings: { projectId: string; roles: string[]; permissions: string[] }[];
}

/** What authentication needs from storage. */
export interface CredentialStore {
  findApiKey(keyId: string): Promise<StoredKey | undefined>;
  /** The key when the store holds it in memory now (a cache): no lookup. Optional. */
  cachedApiKey?(keyId: string): StoredKey | undefined;
  /** A service account's access token by its id (src/oauth/). */
  findAccessToken(tokenId: string): Promise<StoredAccessToken | undefined>;
  /** The ids among `ids` that name no existing project. */
  missingProjects(ids: string[]): Promise<string[]>;
}

export const principalKey = createContextKey<Principal | undefined>(undefined, {
  description: "the authenticated caller",
});

function reasonError(code: Code, reason: string, message: string, metadata: Record<string, string> = {}) {
  return new ConnectError(message, code, undefined, [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason, domain: ERROR_DOMAIN, metadata }) },
  ]);
}

export function unauthenticated(reason: string, message: string): ConnectError {
  return reasonError(Code.Unauthenticated, reason, message);
}

function denied(permission: string, name: string): ConnectError {
  // The resource is the caller's input: echoed cut short.
  const resource = clip(name, MAX_ECHO_CHARS);
  return reasonError(
    Code.PermissionDenied,
    "PERMISSION_DENIED",
    `permission '${permission}' denied on '${resource}' (or it does not exist)`,
    { permission, resource },
  );
}

/** The project id of a resource name `projects/{id}[/...]`. */
export function projectOf(name: string): string | undefined {
  const m = /^projects\/([^/]+)(?:\/|$)/.exec(name);
  return m?.[1];
}

/**
 * Whether `name`, read at `path`, fits the `google.api.resource` pattern of
 * the message holding the field (the `name` of a resource in an Update).
 * Request-level names and parents have protovalidate patterns instead and
 * are always considered here.
 */
function matchesResourcePattern(desc: DescMessage, path: string, name: string): boolean {
  const parts = path.split(".");
  let holder: DescMessage | undefined = desc;
  for (const part of parts.slice(0, -1)) {
    const field: DescField | undefined = holder?.fields.find((f) => f.name === part);
    holder = field?.fieldKind === "message" ? field.message : undefined;
  }
  if (holder === undefined || parts.length === 1) return true;
  const patterns = resourcePatterns(holder);
  return patterns.length === 0 || patterns.some((p) => p.test(name));
}

const patternCache = new WeakMap<DescMessage, RegExp[]>();

/** The `google.api.resource` patterns of a message as regular expressions (compiled once). */
function resourcePatterns(desc: DescMessage): RegExp[] {
  let compiled = patternCache.get(desc);
  if (compiled === undefined) {
    compiled = getOption(desc, resource).pattern.map(
      (p) => new RegExp(`^${p.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    );
    patternCache.set(desc, compiled);
  }
  return compiled;
}

/** The fields along a path of `desc`, resolved once (undefined where a part names no field). */
const resolvedPaths = new WeakMap<DescMessage, Map<string, (DescField | undefined)[]>>();

function resolvePath(desc: DescMessage, path: string): (DescField | undefined)[] {
  let byPath = resolvedPaths.get(desc);
  if (byPath === undefined) {
    byPath = new Map();
    resolvedPaths.set(desc, byPath);
  }
  let fields = byPath.get(path);
  if (fields === undefined) {
    fields = [];
    let d: DescMessage | undefined = desc;
    for (const part of path.split(".")) {
      const field: DescField | undefined = d?.fields.find((f) => f.name === part);
      fields.push(field);
      d = field?.fieldKind === "message" ? field.message : undefined;
    }
    byPath.set(path, fields);
  }
  return fields;
}

/** Reads a string at a proto-name field path, e.g. `regulatory_listing.name`. */
export function readPath(desc: DescMessage, message: Message, path: string): string {
  let m: unknown = message;
  for (const field of resolvePath(desc, path)) {
    if (!field || m === undefined || m === null) return "";
    m = (m as Record<string, unknown>)[field.localName];
  }
  return typeof m === "string" ? m : "";
}

export function bearer(header: string | null): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m?.[1];
}

/** The permissions of a stored key by project, computed once per (cached) StoredKey object. */
const grantsCache = new WeakMap<StoredKey, ReadonlyMap<string, ReadonlySet<string>>>();

function keyGrants(stored: StoredKey): ReadonlyMap<string, ReadonlySet<string>> {
  let grants = grantsCache.get(stored);
  if (grants === undefined) {
    grants = grantsOf(stored.bindings);
    grantsCache.set(stored, grants);
  }
  return grants;
}

/**
 * The secret a (cached) StoredKey object was last verified with: a request
 * presenting the same secret is compared with it in constant time instead
 * of hashed again. The object is replaced whenever the key changes
 * (invalidation), so a changed key is verified afresh.
 */
const verifiedSecrets = new WeakMap<StoredKey, Buffer>();

/** Whether `secret` is the secret of `stored` (SHA-256 compared in constant time; remembered per object). */
function secretMatches(secret: string, stored: StoredKey): boolean {
  const given = Buffer.from(secret, "utf8");
  const verified = verifiedSecrets.get(stored);
  if (verified !== undefined && verified.length === given.length && timingSafeEqual(verified, given)) {
    return true;
  }
  if (!safeEqual(hashSecret(secret), stored.secretHash)) return false;
  verifiedSecrets.set(stored, given);
  return true;
}

export interface AuthOptions {
  operatorToken: string;
  store: CredentialStore;
  /** What decides whether an access token has expired. Default: the system clock. */
  clock?: Clock;
}

/** The permissions of bindings, by project id. */
function grantsOf(bindings: StoredKey["bindings"]): Map<string, Set<string>> {
  const grants = new Map<string, Set<string>>();
  for (const b of bindings) {
    const set = grants.get(b.projectId) ?? new Set<string>();
    for (const p of expandBinding(b.roles, b.permissions)) set.add(p);
    grants.set(b.projectId, set);
  }
  return grants;
}

const OPERATOR: Principal = Object.freeze({ kind: "operator" });

/** The principal of an API key, once found: UNAUTHENTICATED unless the secret is its own and it is enabled. */
function apiKeyPrincipal(secret: string, keyId: string, stored: StoredKey | undefined): Principal {
  if (stored === undefined || !secretMatches(secret, stored)) {
    throw unauthenticated("CREDENTIALS_INVALID", "invalid credentials");
  }
  if (stored.disabled) throw unauthenticated("API_KEY_DISABLED", "the API key is disabled");
  return { kind: "apiKey", keyId, grants: keyGrants(stored) };
}

export class Authenticator {
  constructor(private readonly options: AuthOptions) {}

  get store(): CredentialStore {
    return this.options.store;
  }

  async authenticate(authorization: string | null): Promise<Principal> {
    return this.authenticateNow(authorization);
  }

  /**
   * authenticate(), answered synchronously when no lookup is needed (the
   * operator, or an API key the store holds in memory): the hot path costs
   * no promise. Throws (synchronously) what authenticate() rejects with.
   */
  authenticateNow(authorization: string | null): Principal | Promise<Principal> {
    const secret = bearer(authorization);
    if (secret === undefined) {
      throw unauthenticated(
        "CREDENTIALS_MISSING",
        "missing credentials: send 'Authorization: Bearer <api key secret>'",
      );
    }
    if (safeEqual(secret, this.options.operatorToken)) return OPERATOR;
    const tokenId = accessTokenIdOf(secret);
    if (tokenId !== undefined) return this.authenticateAccessToken(secret, tokenId);
    const keyId = keyIdOf(secret);
    if (keyId === undefined) throw unauthenticated("CREDENTIALS_INVALID", "invalid credentials");
    const store = this.options.store;
    const cached = store.cachedApiKey?.(keyId);
    if (cached !== undefined) return apiKeyPrincipal(secret, keyId, cached);
    return store.findApiKey(keyId).then((stored) => apiKeyPrincipal(secret, keyId, stored));
  }

  /**
   * A service account's access token: read with its account, key and
   * bindings on every request, so disabling or deleting either refuses it at
   * once on every replica.
   */
  private async authenticateAccessToken(token: string, tokenId: string): Promise<Principal> {
    const stored = await this.options.store.findAccessToken(tokenId);
    if (!stored || !safeEqual(hashSecret(token), stored.tokenHash)) {
      throw unauthenticated("CREDENTIALS_INVALID", "invalid credentials");
    }
    if (stored.expireTime.getTime() <= (this.options.clock ?? systemClock).now().getTime()) {
      throw unauthenticated("ACCESS_TOKEN_EXPIRED", "the access token has expired; get a new one");
    }
    if (stored.accountDisabled) {
      throw unauthenticated("SERVICE_ACCOUNT_DISABLED", "the service account is disabled");
    }
    if (stored.keyDisabled) {
      throw unauthenticated("SERVICE_ACCOUNT_KEY_DISABLED", "the service account key is disabled");
    }
    return {
      kind: "serviceAccount",
      accountId: stored.accountId,
      keyId: stored.keyId,
      grants: grantsOf(stored.bindings),
      services: new Set(stored.services),
    };
  }

  /** An access token may call only the services its scope named (src/oauth/scopes.ts). */
  checkScope(principal: Principal, service: string): void {
    if (principal.kind !== "serviceAccount" || principal.services.has(service)) return;
    throw reasonError(
      Code.PermissionDenied,
      "ACCESS_TOKEN_SCOPE",
      `the access token's scope does not include ${service}; get a token with scope https://<host>/${service}`,
      { service },
    );
  }

  /**
   * Throws unless `principal` may call a method with `policy` on `request`.
   * Synchronous on purpose: it reads nothing (the permissions came with the
   * credential), and a caller cannot forget to await it.
   */
  authorize(principal: Principal, policy: MethodPolicy, desc: DescMessage, request: Message): void {
    if (principal.kind === "operator") return;
    const names = policy.projects.map((p) => readPath(desc, request, p));
    const permission = policy.permission;
    if (permission === null) throw denied("operator", "the admin API");
    if (policy.projects.length === 0) {
      for (const perms of principal.grants.values()) if (perms.has(permission)) return;
      throw denied(permission, "any project");
    }
    for (const name of names) {
      const id = projectOf(name);
      if (id === undefined || !principal.grants.get(id)?.has(permission)) {
        throw denied(permission, id === undefined ? name || "(no resource)" : `projects/${id}`);
      }
    }
  }
}

/** Method policies by `package.Service/Method`. */
export type Policies = Readonly<Record<string, MethodPolicy>>;

export function createAuthInterceptor(
  auth: Authenticator,
  policies: Policies = METHOD_POLICIES,
): Interceptor {
  return (next) => (req) => {
    const policy = policies[procedureOf(req.method)];
    if (policy === undefined) {
      throw reasonError(Code.PermissionDenied, "NO_POLICY", "method has no permission policy");
    }
    if (policy.public) return next(req);
    // Synchronous when the credential needs no lookup (the cached hot path).
    const found = auth.authenticateNow(req.header.get("authorization"));
    const proceed = (principal: Principal) => {
      auth.checkScope(principal, req.service.typeName);
      req.contextValues.set(principalKey, principal);
      if (req.stream) {
        const input = req.method.input;
        return next({
          ...req,
          message: guardFirst(req.message, (m) => auth.authorize(principal, policy, input, m)),
        });
      }
      auth.authorize(principal, policy, req.method.input, req.message);
      return next(req);
    };
    return found instanceof Promise ? found.then(proceed) : proceed(found);
  };
}

/**
 * The messages of `messages`, `check` run on the first before it is handed
 * on: what it throws is what the reader of the first message gets.
 */
export async function* guardFirst<T>(
  messages: AsyncIterable<T>,
  check: (message: T) => void | Promise<void>,
): AsyncGenerator<T> {
  let first = true;
  for await (const message of messages) {
    if (first) {
      first = false;
      await check(message);
    }
    yield message;
  }
}

/** Throws NOT_FOUND when a project named by `message` at a policy path does not exist (operator requests). */
async function checkProjectsExist(
  store: CredentialStore,
  policy: MethodPolicy,
  desc: DescMessage,
  message: Message,
): Promise<void> {
  const ids = new Set<string>();
  for (const path of policy.projects) {
    const name = readPath(desc, message, path);
    // A malformed name is the handler's INVALID_ARGUMENT, not a missing project.
    if (!matchesResourcePattern(desc, path, name)) continue;
    const id = projectOf(name);
    if (id !== undefined) ids.add(id);
  }
  if (ids.size > 0) {
    const missing = await store.missingProjects([...ids]);
    if (missing.length > 0) throw notFound("admin.switchboard/Project", `projects/${missing[0]}`);
  }
}

/**
 * After validation: the projects a request names exist. An API key's
 * bindings only ever name existing projects (deleting a project deletes its
 * bindings), so only the operator, who may name any project, is checked —
 * one indexed lookup, after the request was found well-formed.
 */
export function createProjectExistsInterceptor(
  store: CredentialStore,
  policies: Policies = METHOD_POLICIES,
): Interceptor {
  return (next) => (req) => {
    const principal = req.contextValues.get(principalKey);
    if (principal?.kind !== "operator") return next(req);
    const policy = policies[procedureOf(req.method)];
    if (policy === undefined || policy.projects.length === 0) return next(req);
    return checked(next, req, policy);
  };
  async function checked(
    next: Parameters<Interceptor>[0],
    req: Parameters<ReturnType<Interceptor>>[0],
    policy: MethodPolicy,
  ): ReturnType<ReturnType<Interceptor>> {
    const input = req.method.input;
    if (req.stream) {
      // A stream names its projects in its first message (see guardFirst).
      return next({
        ...req,
        message: guardFirst(req.message, (m) => checkProjectsExist(store, policy, input, m)),
      });
    }
    await checkProjectsExist(store, policy, input, req.message);
    return next(req);
  }
}
