/**
 * The permission matrix, generated from the method table: every method of
 * every service, over Connect and REST (and gRPC for a sample), called with
 * no token, an unknown token, a key for another project, a key lacking that
 * one permission, and a key holding exactly that permission.
 */
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescMethodUnary,
  getOption,
  toJson,
} from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  MovePhoneNumberInstanceRequestSchema,
  PhoneNumberInstances,
} from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { http } from "../../gen/google/api/annotations_pb.js";
import { ALL_PERMISSIONS, METHOD_POLICIES, type MethodPolicy } from "../../src/auth/permissions.js";
import { type App, build } from "../../src/server.js";
import { bearer, newApiKey, newProject, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

type Outcome = "UNAUTHENTICATED" | "PERMISSION_DENIED" | "AUTHORIZED";

interface Case {
  name: string;
  token: () => string | undefined;
  expected: Outcome;
}

const backend = testDatabases()[0]!; // transports are the subject here; PGlite is enough

describe("permission matrix", () => {
  const database = useTestDatabase(backend);
  let app: App;
  let baseUrl: string;
  let projectA: string; // the project every request names
  let projectB: string; // another project
  let projectD: string; // the destination of moves
  const exact = new Map<string, string>(); // permission -> secret of a key holding exactly it on A (and D)
  const lacking = new Map<string, string>(); // permission -> secret of a key holding all but it on A and D
  const other = new Map<string, string>(); // permission -> secret of a key holding it on B only

  const projectScoped = Object.entries(METHOD_POLICIES).filter(([, p]) => !p.public && p.permission !== null);
  // Unary methods go through every transport below; a streaming method
  // (Streams.StreamCall, gRPC only) names its project in its first message
  // and has its own authorization tests.
  const STREAMING = new Set(["enfonica.voice.v1beta1.Streams/StreamCall"]);
  const unaryScoped = projectScoped.filter(([path]) => !STREAMING.has(path));

  beforeAll(async () => {
    app = await build({ config: testConfig(), db: database.db });
    const address = await app.listen(0, "127.0.0.1");
    baseUrl = `http://127.0.0.1:${address.port}`;
    projectA = await newProject(database.db);
    projectB = await newProject(database.db);
    projectD = await newProject(database.db);
    for (const permission of ALL_PERMISSIONS) {
      exact.set(
        permission,
        (
          await newApiKey(database.db, [
            { project: projectA, permissions: [permission] },
            { project: projectD, permissions: [permission] },
          ])
        ).secret,
      );
      const allBut = ALL_PERMISSIONS.filter((p) => p !== permission);
      lacking.set(
        permission,
        (
          await newApiKey(database.db, [
            { project: projectA, permissions: allBut },
            { project: projectD, permissions: allBut },
          ])
        ).secret,
      );
      other.set(
        permission,
        (await newApiKey(database.db, [{ project: projectB, permissions: [permission] }])).secret,
      );
    }
  });

  afterAll(async () => {
    await app?.close();
  });

  it("has a policy for every method the server serves", () => {
    const served = app.services.flatMap((s) => s.desc.methods.map((m) => `${s.desc.typeName}/${m.name}`));
    expect(served.length).toBeGreaterThan(40);
    const missing = served.filter((m) => METHOD_POLICIES[m] === undefined);
    expect(missing).toEqual([]);
  });

  /** A value for a project-naming field: a well-formed name in `project`. */
  function nameFor(method: DescMethod, path: string, project: string): string {
    const rule = getOption(method, http);
    const templates = [rule, ...rule.additionalBindings].map((r) => {
      const p = r.pattern;
      return p.case === "custom" ? p.value.path : ((p.value as string | undefined) ?? "");
    });
    for (const t of templates) {
      const m = new RegExp(`\\{${path.replace(/\./g, "\\.")}=([^}]+)\\}`).exec(t);
      if (m) {
        const id = project.split("/")[1]!;
        return m[1]!.replace(/^projects\/\*/, `projects/${id}`).replace(/\*/g, "x1");
      }
    }
    return project; // a plain parent, e.g. destination_parent
  }

  function requestFor(method: DescMethod, policy: MethodPolicy, source: string, destination: string) {
    const init: Record<string, unknown> = {};
    policy.projects.forEach((path, i) => {
      const value = nameFor(method, path, i === 0 ? source : destination);
      const parts = path.split(".");
      let desc: DescMessage = method.input;
      let target = init;
      parts.forEach((part, j) => {
        const field = desc.fields.find((f) => f.name === part)!;
        if (j === parts.length - 1) {
          target[field.localName] = value;
        } else {
          target[field.localName] ??= {};
          target = target[field.localName] as Record<string, unknown>;
          desc = field.message!;
        }
      });
    });
    return create(method.input, init);
  }

  function outcomeOfCode(code: Code | undefined): Outcome {
    if (code === Code.Unauthenticated) return "UNAUTHENTICATED";
    if (code === Code.PermissionDenied) return "PERMISSION_DENIED";
    return "AUTHORIZED";
  }

  async function callRpc(
    transport: Transport,
    method: DescMethod,
    input: ReturnType<typeof requestFor>,
  ): Promise<Outcome> {
    if (method.methodKind !== "unary") throw new Error("unary only");
    try {
      await transport.unary(method as DescMethodUnary, undefined, undefined, undefined, input);
      return "AUTHORIZED";
    } catch (err) {
      return outcomeOfCode(ConnectError.from(err).code);
    }
  }

  async function callRest(
    method: DescMethod,
    input: ReturnType<typeof requestFor>,
    token: string | undefined,
  ): Promise<{ outcome: Outcome; status: number; body: { error?: { status?: string } } }> {
    const rule = getOption(method, http);
    const verb = rule.pattern.case === "custom" ? rule.pattern.value.kind : rule.pattern.case!;
    const template =
      rule.pattern.case === "custom" ? rule.pattern.value.path : (rule.pattern.value as string);
    const json = toJson(method.input, input) as Record<string, unknown>;
    const path = template.replace(/\{([^}=]+)(=[^}]*)?\}/g, (_, field: string) => {
      const value = field.split(".").reduce<unknown>((v, part) => {
        const camel = part.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
        return (v as Record<string, unknown> | undefined)?.[camel];
      }, json);
      return String(value).split("/").map(encodeURIComponent).join("/");
    });
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (rule.body === "*") {
      const rest = { ...json };
      for (const v of template.matchAll(/\{([^}=.]+)/g)) {
        delete rest[v[1]!.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())];
      }
      body = JSON.stringify(rest);
    } else if (rule.body !== "") {
      body = "{}";
    }
    const res = await fetch(`${baseUrl}${path}`, {
      method: verb.toUpperCase(),
      headers,
      ...(body === undefined ? {} : { body }),
    });
    const parsed = (await res.json()) as { error?: { status?: string } };
    const status = res.status;
    const outcome: Outcome =
      status === 401 ? "UNAUTHENTICATED" : status === 403 ? "PERMISSION_DENIED" : "AUTHORIZED";
    return { outcome, status, body: parsed };
  }

  function casesFor(policy: MethodPolicy): Case[] {
    const permission = policy.permission!;
    const cases: Case[] = [
      { name: "no token", token: () => undefined, expected: "UNAUTHENTICATED" },
      {
        name: "an unknown token",
        token: () => "sb_unknownkey000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        expected: "UNAUTHENTICATED",
      },
      {
        name: "a key lacking the permission",
        token: () => lacking.get(permission),
        expected: "PERMISSION_DENIED",
      },
      {
        name: "a key holding exactly the permission",
        token: () => exact.get(permission),
        expected: "AUTHORIZED",
      },
    ];
    if (policy.projects.length > 0) {
      cases.splice(2, 0, {
        name: "a key for another project",
        token: () => other.get(permission),
        expected: "PERMISSION_DENIED",
      });
    }
    return cases;
  }

  describe.each(unaryScoped)("%s", (methodPath, policy) => {
    const [serviceName, methodName] = methodPath.split("/") as [string, string];
    const method = () => {
      const entry = app.services.find((s) => s.desc.typeName === serviceName)!;
      return entry.desc.methods.find((m) => m.name === methodName)!;
    };

    it.each(casesFor(policy).map((c) => [c.name, c] as const))("Connect with %s", async (_name, c) => {
      const transport = createConnectTransport({
        baseUrl,
        httpVersion: "1.1",
        interceptors: [bearer(c.token())],
      });
      const m = method();
      expect(await callRpc(transport, m, requestFor(m, policy, projectA, projectD))).toBe(c.expected);
    });

    it.each(casesFor(policy).map((c) => [c.name, c] as const))("REST with %s", async (_name, c) => {
      const m = method();
      const { outcome, status, body } = await callRest(
        m,
        requestFor(m, policy, projectA, projectD),
        c.token(),
      );
      expect(outcome, `HTTP ${status} ${JSON.stringify(body)}`).toBe(c.expected);
      if (c.expected === "UNAUTHENTICATED") expect(body.error?.status).toBe("UNAUTHENTICATED");
      if (c.expected === "PERMISSION_DENIED") expect(body.error?.status).toBe("PERMISSION_DENIED");
    });
  });

  // gRPC (HTTP/2) for a sample: one method per area.
  const sample = [
    "enfonica.numbering.v1beta1.RegulatoryListings/GetRegulatoryListing",
    "enfonica.messaging.v1.Unsubscribers/CreateUnsubscriber",
    "enfonica.voice.v1beta1.Calls/ListCalls",
    "enfonica.numbering.v1beta1.PhoneNumberInstances/MovePhoneNumberInstance",
  ];
  describe.each(sample)("gRPC %s", (methodPath) => {
    const policy = METHOD_POLICIES[methodPath]!;
    it.each(casesFor(policy).map((c) => [c.name, c] as const))("with %s", async (_name, c) => {
      const [serviceName, methodName] = methodPath.split("/") as [string, string];
      const entry = app.services.find((s) => s.desc.typeName === serviceName)!;
      const m = entry.desc.methods.find((x) => x.name === methodName)!;
      const transport = createGrpcTransport({ baseUrl, interceptors: [bearer(c.token())] });
      expect(await callRpc(transport, m, requestFor(m, policy, projectA, projectD))).toBe(c.expected);
    });
  });

  describe("MovePhoneNumberInstance needs the permission on both projects", () => {
    const move = "numbering.phoneNumberInstances.move";
    async function moveWith(bindings: { project: string; permissions: string[] }[]) {
      const { secret } = await newApiKey(database.db, bindings);
      const client = createClient(
        PhoneNumberInstances,
        createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [bearer(secret)] }),
      );
      try {
        await client.movePhoneNumberInstance(
          create(MovePhoneNumberInstanceRequestSchema, {
            name: `${projectA}/phoneNumberInstances/n1`,
            destinationParent: projectD,
          }),
        );
        return "AUTHORIZED";
      } catch (err) {
        return outcomeOfCode(ConnectError.from(err).code);
      }
    }

    it("denies a key holding it on the source only", async () => {
      expect(await moveWith([{ project: projectA, permissions: [move] }])).toBe("PERMISSION_DENIED");
    });

    it("denies a key holding it on the destination only", async () => {
      expect(await moveWith([{ project: projectD, permissions: [move] }])).toBe("PERMISSION_DENIED");
    });

    it("authorizes a key holding it on both", async () => {
      expect(
        await moveWith([
          { project: projectA, permissions: [move] },
          { project: projectD, permissions: [move] },
        ]),
      ).toBe("AUTHORIZED");
    });
  });
});
