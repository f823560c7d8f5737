/**
 * Authentication and authorization for every method on every transport
 * (REST reaches the same interceptors). Order: the method's policy, the
 * credential (UNAUTHENTICATED when missing, unknown or disabled), then the
 * permission on every project the request names (PERMISSION_DENIED) — all
 * before any lookup of the resource, so a caller without the permission
 * learns nothing about whether it exists.
 */
import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { create, getOption } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { resource } from "../../gen/google/api/resource_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { clip, ERROR_DOMAIN, MAX_ECHO_CHARS, notFound } from "../api/errors.js";
import { expandBinding, METHOD_POLICIES, type MethodPolicy } from "./permissions.js";
import { hashSecret, keyIdOf, safeEqual } from "./secrets.js";

export type Principal =
  | { kind: "operator" }
  | { kind: "apiKey"; keyId: string; grants: ReadonlyMap<string, ReadonlySet<string>> };

export interface StoredKey {
  secretHash: string;
  disabled: boolean;
  bindings: { projectId: string; roles: string[]; permissions: string[] }[];
}

/** What authentication needs from storage. */
export interface CredentialStore {
  findApiKey(keyId: string): Promise<StoredKey | undefined>;
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

/** Reads a string at a proto-name field path, e.g. `regulatory_listing.name`. */
export function readPath(desc: DescMessage, message: Message, path: string): string {
  let d: DescMessage | undefined = desc;
  let m: unknown = message;
  for (const part of path.split(".")) {
    const field: DescField | undefined = d?.fields.find((f) => f.name === part);
    if (!field || m === undefined || m === null) return "";
    m = (m as Record<string, unknown>)[field.localName];
    d = field.fieldKind === "message" ? field.message : undefined;
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

function grantsOf(stored: StoredKey): ReadonlyMap<string, ReadonlySet<string>> {
  let grants = grantsCache.get(stored);
  if (grants === undefined) {
    const map = new Map<string, Set<string>>();
    for (const b of stored.bindings) {
      const set = map.get(b.projectId) ?? new Set<string>();
      for (const p of expandBinding(b.roles, b.permissions)) set.add(p);
      map.set(b.projectId, set);
    }
    grants = map;
    grantsCache.set(stored, grants);
  }
  return grants;
}

export interface AuthOptions {
  operatorToken: string;
  store: CredentialStore;
}

export class Authenticator {
  constructor(private readonly options: AuthOptions) {}

  get store(): CredentialStore {
    return this.options.store;
  }

  async authenticate(authorization: string | null): Promise<Principal> {
    const secret = bearer(authorization);
    if (secret === undefined) {
      throw unauthenticated(
        "CREDENTIALS_MISSING",
        "missing credentials: send 'Authorization: Bearer <api key secret>'",
      );
    }
    if (safeEqual(secret, this.options.operatorToken)) return { kind: "operator" };
    const keyId = keyIdOf(secret);
    const stored = keyId === undefined ? undefined : await this.options.store.findApiKey(keyId);
    if (!keyId || !stored || !safeEqual(hashSecret(secret), stored.secretHash)) {
      throw unauthenticated("CREDENTIALS_INVALID", "invalid credentials");
    }
    if (stored.disabled) throw unauthenticated("API_KEY_DISABLED", "the API key is disabled");
    return { kind: "apiKey", keyId, grants: grantsOf(stored) };
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
  return (next) => async (req) => {
    const policy = policies[`${req.service.typeName}/${req.method.name}`];
    if (policy === undefined) {
      throw reasonError(Code.PermissionDenied, "NO_POLICY", "method has no permission policy");
    }
    if (policy.public) return next(req);
    const principal = await auth.authenticate(req.header.get("authorization"));
    if (req.stream) throw reasonError(Code.PermissionDenied, "NO_POLICY", "streaming method needs a policy");
    auth.authorize(principal, policy, req.method.input, req.message);
    req.contextValues.set(principalKey, principal);
    return next(req);
  };
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
  return (next) => async (req) => {
    const principal = req.contextValues.get(principalKey);
    const policy = policies[`${req.service.typeName}/${req.method.name}`];
    if (principal?.kind === "operator" && policy && policy.projects.length > 0 && !req.stream) {
      const ids = new Set<string>();
      for (const path of policy.projects) {
        const name = readPath(req.method.input, req.message, path);
        // A malformed name is the handler's INVALID_ARGUMENT, not a missing project.
        if (!matchesResourcePattern(req.method.input, path, name)) continue;
        const id = projectOf(name);
        if (id !== undefined) ids.add(id);
      }
      if (ids.size > 0) {
        const missing = await store.missingProjects([...ids]);
        if (missing.length > 0) throw notFound("admin.switchboard/Project", `projects/${missing[0]}`);
      }
    }
    return next(req);
  };
}
