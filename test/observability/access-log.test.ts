/**
 * The access log: one JSON line at info per request on every transport,
 * with the request id (the caller's, or generated) echoed in `X-Request-Id`
 * and put in the ErrorInfo metadata of errors; REST logged once, as `rest`;
 * health probes only at debug.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { newApiKey, newProject, TEST_OPERATOR_TOKEN } from "../support/app.js";
import { useAppDatabase } from "../transport/helpers.js";
import { eventually, type LogLine, type RpcTransportName, rpcClient, startObservedApp } from "./support.js";

describe("Access log", () => {
  const database = useAppDatabase();
  let app: Awaited<ReturnType<typeof startObservedApp>>;
  let project: string;
  let projectId: string;
  let key: { name: string; secret: string };

  beforeAll(async () => {
    app = await startObservedApp(database.db);
    project = await newProject(database.db);
    projectId = project.split("/")[1]!;
    key = await newApiKey(database.db, [{ project, roles: ["roles/owner"] }]);
  });
  afterAll(async () => {
    await app?.close();
  });

  const linesOf = (requestId: string) =>
    app.log.lines.filter((l) => l.msg === "request" && l.requestId === requestId);

  async function oneLine(requestId: string): Promise<LogLine> {
    await eventually(() => linesOf(requestId).length > 0);
    // Give a second line (a REST request logged twice) the chance to appear.
    await new Promise((r) => setTimeout(r, 50));
    const lines = linesOf(requestId);
    expect(lines).toHaveLength(1);
    return lines[0]!;
  }

  const keyId = () => key.name.replace(/^apiKeys\//, "");

  describe.each<RpcTransportName>(["connect", "grpc", "grpc-web"])("over %s", (transport) => {
    it("logs one line with the caller's request id, echoes it, and names method, project and key", async () => {
      const requestId = `req-${transport}-ok`;
      let echoed: string | null = null;
      const c = rpcClient(
        Unsubscribers,
        transport,
        app.baseUrl,
        { authorization: `Bearer ${key.secret}`, "x-request-id": requestId },
        (h) => {
          echoed = h.get("x-request-id");
        },
      );
      try {
        await c.client.listUnsubscribers({ parent: project });
      } finally {
        c.close();
      }
      expect(echoed).toBe(requestId);
      const line = await oneLine(requestId);
      expect(line).toMatchObject({
        level: 30,
        transport,
        service: "enfonica.messaging.v1.Unsubscribers",
        method: "ListUnsubscribers",
        project: projectId,
        credential: `apiKeys/${keyId()}`,
        code: "OK",
      });
      expect(typeof line.ms).toBe("number");
      expect(typeof line.bytesOut).toBe("number");
      expect(JSON.stringify(line)).not.toContain(key.secret);
    });

    it("generates an id when none is sent and puts it in the error's ErrorInfo", async () => {
      const c = rpcClient(Unsubscribers, transport, app.baseUrl, { authorization: `Bearer ${key.secret}` });
      let error: ConnectError | undefined;
      try {
        await c.client.getUnsubscriber({ name: `${project}/unsubscribers/missing` });
      } catch (err) {
        error = ConnectError.from(err);
      } finally {
        c.close();
      }
      expect(error?.code).toBe(Code.NotFound);
      const echoed = error!.metadata.get("x-request-id");
      expect(echoed).toMatch(/^[0-9a-f-]{36}$/);
      const info = error!.findDetails(ErrorInfoSchema)[0];
      expect(info?.metadata.requestId).toBe(echoed);
      const line = await oneLine(echoed!);
      expect(line).toMatchObject({ transport, method: "GetUnsubscriber", code: "NOT_FOUND" });
    });
  });

  describe("over REST", () => {
    it("logs once, as rest, with the RPC it maps to", async () => {
      const requestId = "req-rest-ok";
      const res = await fetch(`${app.baseUrl}/v1/${project}/unsubscribers`, {
        headers: { authorization: `Bearer ${key.secret}`, "x-request-id": requestId },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-request-id")).toBe(requestId);
      const line = await oneLine(requestId);
      expect(line).toMatchObject({
        transport: "rest",
        service: "enfonica.messaging.v1.Unsubscribers",
        method: "ListUnsubscribers",
        project: projectId,
        credential: `apiKeys/${keyId()}`,
        code: "OK",
        status: 200,
      });
    });

    it("puts the request id in error details and logs the code", async () => {
      const res = await fetch(`${app.baseUrl}/v1/${project}/unsubscribers/missing`, {
        headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}`, "x-request-id": "req-rest-404" },
      });
      expect(res.status).toBe(404);
      const body = (await res.json()) as { error: { details: { metadata?: Record<string, string> }[] } };
      expect(body.error.details.some((d) => d.metadata?.requestId === "req-rest-404")).toBe(true);
      const line = await oneLine("req-rest-404");
      expect(line).toMatchObject({
        transport: "rest",
        code: "NOT_FOUND",
        status: 404,
        credential: "operator",
      });
    });

    it("puts the request id in the errors of the REST layer itself: no route, wrong verb, too large", async () => {
      const cases: [string, RequestInit, number][] = [
        ["/v1/nowhere/at/all", {}, 404],
        [`/v1/${project}/unsubscribers`, { method: "PUT" }, 405],
        [
          `/v1/${project}/unsubscribers`,
          {
            method: "POST",
            body: "x".repeat(5 * 1024 * 1024),
            headers: { "content-type": "application/json" },
          },
          413,
        ],
      ];
      for (const [path, init, status] of cases) {
        const id = `req-rest-layer-${status}`;
        const res = await fetch(`${app.baseUrl}${path}`, {
          ...init,
          headers: { ...(init.headers as Record<string, string>), "x-request-id": id },
        });
        expect(res.status).toBe(status);
        expect(res.headers.get("x-request-id")).toBe(id);
        const body = (await res.json()) as { error: { details: { metadata?: Record<string, string> }[] } };
        const tagged = body.error.details.filter((d) => d.metadata?.requestId !== undefined);
        expect(tagged.map((d) => d.metadata!.requestId)).toEqual([id]);
      }
    });

    it("puts the request id in protocol-level errors of Connect: unknown procedure, undecodable message", async () => {
      const cases: [string, string, Uint8Array | string, number][] = [
        ["/switchboard.nowhere.v1.Nothing/Nope", "application/json", "{}", 501],
        [
          "/enfonica.messaging.v1.Unsubscribers/ListUnsubscribers",
          "application/proto",
          new Uint8Array([0xff, 0xff, 0xff]),
          400,
        ],
      ];
      for (const [path, contentType, body, status] of cases) {
        const id = `req-connect-${status}`;
        const res = await fetch(`${app.baseUrl}${path}`, {
          method: "POST",
          headers: {
            "content-type": contentType,
            "connect-protocol-version": "1",
            authorization: `Bearer ${TEST_OPERATOR_TOKEN}`,
            "x-request-id": id,
          },
          body,
        });
        expect(res.status).toBe(status);
        const json = (await res.json()) as { details?: { type: string; value: string }[] };
        const infos = (json.details ?? [])
          .filter((d) => d.type === ErrorInfoSchema.typeName)
          .map((d) => fromBinary(ErrorInfoSchema, Buffer.from(d.value, "base64")));
        expect(infos.map((i) => i.metadata.requestId)).toEqual([id]);
      }
    });

    it("replaces an insane request id with a generated one", async () => {
      const res = await fetch(`${app.baseUrl}/v1/${project}/unsubscribers`, {
        headers: { authorization: `Bearer ${key.secret}`, "x-request-id": "bad id with spaces" },
      });
      const echoed = res.headers.get("x-request-id");
      expect(echoed).toMatch(/^[0-9a-f-]{36}$/);
      await oneLine(echoed!);
    });

    it("logs UNAUTHENTICATED without a credential", async () => {
      const res = await fetch(`${app.baseUrl}/v1/${project}/unsubscribers`, {
        headers: { "x-request-id": "req-rest-401" },
      });
      expect(res.status).toBe(401);
      const line = await oneLine("req-rest-401");
      expect(line.code).toBe("UNAUTHENTICATED");
      expect(line.credential).toBeUndefined();
    });
  });

  it("does not log health probes at info", async () => {
    const res = await fetch(`${app.baseUrl}/healthz`, { headers: { "x-request-id": "req-healthz" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("req-healthz");
    await new Promise((r) => setTimeout(r, 50));
    expect(linesOf("req-healthz")).toHaveLength(0);
  });
});
