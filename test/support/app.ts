/**
 * In-process clients: the real services and the real interceptors (the same
 * list the server uses) over createRouterTransport, on a test database.
 */
import { randomBytes } from "node:crypto";
import type { DescService } from "@bufbuild/protobuf";
import {
  type Client,
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
  type Interceptor,
} from "@connectrpc/connect";
import { expect } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ApiKeysDomain } from "../../src/admin/api-keys.js";
import { ApiKeysRepository } from "../../src/admin/api-keys-repository.js";
import { ProjectsDomain } from "../../src/admin/projects.js";
import { ProjectsRepository } from "../../src/admin/projects-repository.js";
import { createInterceptors } from "../../src/api/interceptors.js";
import { Authenticator } from "../../src/auth/interceptor.js";
import { DbCredentialStore } from "../../src/auth/store.js";
import { type Clock, systemClock } from "../../src/clock.js";
import { loadConfig } from "../../src/config.js";
import type { Db } from "../../src/db/client.js";
import { createLogger } from "../../src/log.js";
import { buildServices } from "../../src/services.js";

/** The operator token of every test app and client. */
export const TEST_OPERATOR_TOKEN = "test-operator-token-0123456789abcdef";

/** The recording link secret of every test app. */
export const TEST_RECORDING_LINK_SECRET = "test-recording-link-secret-0123456789abcdef";

/** A configuration for tests: silent, with the test operator token and recording link secret. */
export function testConfig(env: NodeJS.ProcessEnv = {}) {
  return loadConfig({
    LOG_LEVEL: "silent",
    SWITCHBOARD_OPERATOR_TOKEN: TEST_OPERATOR_TOKEN,
    RECORDING_LINK_SECRET: TEST_RECORDING_LINK_SECRET,
    ...env,
  });
}

/** An interceptor sending `Authorization: Bearer <token>` (no header when token is undefined). */
export function bearer(token: string | undefined): Interceptor {
  return (next) => (req) => {
    if (token !== undefined) req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** The in-process transport: real services and interceptors on `db`. */
export function createTestTransport(db: Db, clock: Clock, token: string | undefined = TEST_OPERATOR_TOKEN) {
  const config = testConfig();
  const log = createLogger("silent");
  const services = buildServices({ config, clock, log, db });
  const auth = new Authenticator({ operatorToken: TEST_OPERATOR_TOKEN, store: new DbCredentialStore(db) });
  return createRouterTransport(
    (router) => {
      for (const s of services) router.service(s.desc, s.impl);
    },
    { router: { interceptors: createInterceptors(log, auth) }, transport: { interceptors: [bearer(token)] } },
  );
}

/** A client calling as the operator (or as `token`). */
export function createTestClient<S extends DescService>(
  service: S,
  db: Db,
  clock: Clock,
  token: string | undefined = TEST_OPERATOR_TOKEN,
): Client<S> {
  return createClient(service, createTestTransport(db, clock, token));
}

/**
 * A project of its own for each test, so tests sharing a database never see
 * each other's rows. Returns its name, `projects/{id}`.
 */
export async function newProject(db: Db): Promise<string> {
  const id = `p-${randomBytes(6).toString("hex")}`;
  await new ProjectsDomain(new ProjectsRepository(db), systemClock).create(id, "");
  return `projects/${id}`;
}

/**
 * Creates projects with fixed ids, for tests whose requests name them
 * (`projects/p1`): the operator may name any project, but it must exist.
 */
export async function createProjects(db: Db, ...ids: string[]): Promise<void> {
  const domain = new ProjectsDomain(new ProjectsRepository(db), systemClock);
  for (const id of ids) await domain.create(id, "");
}

/** An API key with `bindings`; returns its secret. */
export async function newApiKey(
  db: Db,
  bindings: { project: string; roles?: string[]; permissions?: string[] }[],
): Promise<{ name: string; secret: string }> {
  const projects = new ProjectsRepository(db);
  const domain = new ApiKeysDomain(new ApiKeysRepository(db), projects, systemClock);
  const { key, secret } = await domain.create(
    "test key",
    bindings.map((b) => ({ project: b.project, roles: b.roles ?? [], permissions: b.permissions ?? [] })),
    false,
  );
  return { name: `apiKeys/${key.id}`, secret };
}

/** Runs `call`, expecting it to fail with `code`; returns the error. */
export async function expectCode(call: Promise<unknown>, code: Code): Promise<ConnectError> {
  let error: unknown;
  try {
    await call;
  } catch (err) {
    error = err;
  }
  expect(error, "the call should have failed").toBeInstanceOf(ConnectError);
  const ce = error as ConnectError;
  expect(Code[ce.code], ce.message).toBe(Code[code]);
  return ce;
}

/** The field paths of the BadRequest violations of an error. */
export function violationFields(error: ConnectError): string[] {
  return error.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations.map((v) => v.field));
}

/** The ErrorInfo reason of an error. */
export function errorReason(error: ConnectError): string | undefined {
  return error.findDetails(ErrorInfoSchema)[0]?.reason;
}

/** Expects INVALID_ARGUMENT with a BadRequest naming exactly `fields` (in any order). */
export async function expectInvalid(call: Promise<unknown>, fields: string[]): Promise<ConnectError> {
  const error = await expectCode(call, Code.InvalidArgument);
  expect(errorReason(error)).toBe("INVALID_ARGUMENT");
  expect([...new Set(violationFields(error))].sort()).toEqual([...fields].sort());
  return error;
}

/** Collects every page of a list call. */
export async function collectPages<T>(
  fetch: (pageToken: string) => Promise<{ items: T[]; nextPageToken: string }>,
): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let token = "";
  let pages = 0;
  do {
    const page = await fetch(token);
    items.push(...page.items);
    token = page.nextPageToken;
    pages++;
    if (pages > 1000) throw new Error("too many pages");
  } while (token !== "");
  return { items, pages };
}
