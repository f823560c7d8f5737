/**
 * Two replicas of the service on one PostgreSQL database (issue 12, item 5),
 * in the two layouts an operator runs: `ROLE=all` twice, and `ROLE=api`
 * beside `ROLE=worker`. Each replica is the compiled server (dist/server.js)
 * in a process of its own, as test/startup/start.test.ts runs it: separate
 * processes share nothing but the database (no module state, no in-process
 * fan-out), and a `ROLE=worker` process really does not listen.
 *
 * Calls are created through every listening replica (Connect over HTTP/1.1
 * on one, gRPC on the other; under `api` + `worker` both protocols go to the
 * api replica, the worker not listening), run on the carrier simulator at a small
 * SIMULATOR_TIME_SCALE to COMPLETED, and their state updates go to a real
 * local receiver. The test checks that every call completes, is visible
 * through every listening replica, and that every CALL_STATE_UPDATE event is
 * received exactly once per recorded attempt (Standard Webhooks
 * `webhook-id`s), signed, in the call's order (QUEUED, STARTING, RINGING,
 * IN_PROGRESS, COMPLETED). The process that made each request is found from
 * the receiving socket's peer port (procfs): a call's control requests come
 * from the replica it was created through (its engine drives it), and under
 * `api` + `worker` every state update comes from the worker.
 *
 * A third case (issue 32): two replicas with data directories of their own
 * sharing an S3 bucket (s3rver); a call recorded through one replica is
 * downloaded, whole and in a range, through the other.
 *
 * PostgreSQL only (TEST_DATABASE_URL); PGlite is one process's database.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromJsonString } from "@bufbuild/protobuf";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PhoneNumberInstances } from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import {
  PhoneNumber_PhoneNumberCapability as Capability,
  PhoneNumber_PhoneNumberType as NumberType,
} from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { CallRecordingConfig_CallRecordingTrigger as Trigger } from "../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import { CallRequestSchema } from "../../gen/enfonica/voice/v1beta1/call_request_pb.js";
import { type Call, Call_State, CallSchema, Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  type Recording,
  Recording_State,
  Recordings,
  RecordingView,
} from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import { NumberingAdmin } from "../../gen/switchboard/admin/v1/numbering_pb.js";
import { Projects } from "../../gen/switchboard/admin/v1/projects_pb.js";
import { SimulatorAdmin, SimulatorRoute_Audio } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import {
  WebhookDeliveries,
  type WebhookDelivery,
  WebhookDelivery_State,
} from "../../gen/switchboard/admin/v1/webhooks_pb.js";
import { type Database, openPostgres } from "../../src/db/client.js";
import { bearer, collectPages } from "../support/app.js";
import { ensureBuilt } from "../support/build.js";
import { expectSigned, keyOf, sleep, TERMINAL, xml } from "../support/calls.js";
import { createScratchDatabase, describePostgres } from "../support/db.js";
import { freePort, launch, type Proc } from "../support/process.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { startS3, type TestS3 } from "../support/s3.js";
import { socketOwner } from "../support/socket-owner.js";

const OPERATOR_TOKEN = "replicas-test-operator-token-0123456789";
const PROJECT_ID = "replicas";
const PROJECT = `projects/${PROJECT_ID}`;
/** Fictional AU numbers (ACMA's drama range): the caller id, and the destinations' route. */
const FROM = "+61255501300";
const TO_PREFIX = "+614915703";
/** Calls created through each client (two clients: one per replica, or both to the api replica). */
const CALLS_PER_CLIENT = 6;
const STATES = ["QUEUED", "STARTING", "RINGING", "IN_PROGRESS", "COMPLETED"];

type Role = "all" | "api" | "worker";

interface Replica extends Proc {
  role: Role;
  /** The PORT it was given (a worker ignores it). */
  port: number;
  /** Listening replicas: `http://127.0.0.1:{port}`. */
  base?: string;
}

/** The JSON log lines of a replica's output. */
function logLines(output: string): { msg: string; level: number; [k: string]: unknown }[] {
  return output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { msg: string; level: number });
}

/** Until a listening replica's /readyz answers 200, or a worker logs that it started. */
async function untilReady(r: Replica, limitMs = 90_000): Promise<void> {
  const t0 = performance.now();
  while (performance.now() - t0 < limitMs) {
    if (r.child.exitCode !== null)
      throw new Error(`replica ${r.role} exited (${r.child.exitCode}):\n${r.output()}`);
    if (r.base === undefined) {
      if (logLines(r.output()).some((l) => l.msg === "switchboard worker started")) return;
    } else {
      try {
        if ((await fetch(`${r.base}/readyz`)).status === 200) return;
      } catch {
        // not listening yet
      }
    }
    await sleep(50);
  }
  throw new Error(`replica ${r.role} not ready after ${limitMs} ms:\n${r.output()}`);
}

/** Clients of one listening replica over one protocol. */
interface Clients {
  replica: Replica;
  calls: Client<typeof Calls>;
  deliveries: Client<typeof WebhookDeliveries>;
}

function clientsOf(replica: Replica, transport: Transport): Clients {
  return {
    replica,
    calls: createClient(Calls, transport),
    deliveries: createClient(WebhookDeliveries, transport),
  };
}

/** A request received, and the replica process whose socket sent it. */
interface Sent {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  from: Role | "unknown";
  pid: number | undefined;
}

describePostgres("two replicas on one PostgreSQL", () => {
  beforeAll(ensureBuilt, 600_000);

  describe.each([
    { layout: "ROLE=all twice", roles: ["all", "all"] as Role[] },
    { layout: "ROLE=api and ROLE=worker", roles: ["api", "worker"] as Role[] },
  ])("$layout", ({ roles }) => {
    let scratch: { url: string; drop(): Promise<void> };
    let database: Database;
    let dataDir: string;
    let handler: Receiver;
    let states: Receiver;
    const replicas: Replica[] = [];
    /** Connect clients of the first listening replica, gRPC clients of the second (or of the first again). */
    const clients: Clients[] = [];
    const handled: Sent[] = [];
    const updates: Sent[] = [];

    /** Records a request with the replica whose socket sent it (looked up while the socket is open). */
    function record(
      into: Sent[],
      req: { path: string; headers: Sent["headers"]; body: string },
      port: number,
      receiverPort: number,
    ) {
      const pid = socketOwner(
        port,
        replicas.map((r) => r.child.pid!),
        receiverPort,
      );
      const replica = replicas.find((r) => r.child.pid === pid);
      into.push({ ...req, pid, from: replica?.role ?? "unknown" });
    }

    beforeAll(async () => {
      scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
      database = openPostgres(scratch.url);
      dataDir = mkdtempSync(join(tmpdir(), "sb-replicas-"));
      handler = await startReceiver();
      states = await startReceiver();
      // Both start at once: migrations run under an advisory lock.
      for (const role of roles) {
        const port = await freePort();
        const proc = launch(process.execPath, ["dist/server.js"], {
          HOST: "127.0.0.1",
          PORT: String(port),
          LOG_LEVEL: "info",
          ROLE: role,
          DATABASE_URL: scratch.url,
          SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN,
          RECORDING_LINK_SECRET: "replicas-test-recording-secret-0123456789",
          DATA_DIR: dataDir,
          SIMULATOR_TIME_SCALE: "0.01",
          WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
          WEBHOOKS_POLL_INTERVAL_MS: "50",
        });
        replicas.push({
          ...proc,
          role,
          port,
          ...(role === "worker" ? {} : { base: `http://127.0.0.1:${port}` }),
        });
      }
      await Promise.all(replicas.map((r) => untilReady(r)));
      // Connect (HTTP/1.1) to the first listening replica, gRPC to the second (the api replica
      // alone listens under api + worker: both protocols to it).
      const listening = replicas.filter((r) => r.base !== undefined);
      const [first, second = first] = listening;
      clients.push(
        clientsOf(
          first!,
          createConnectTransport({
            baseUrl: first!.base!,
            httpVersion: "1.1",
            interceptors: [bearer(OPERATOR_TOKEN)],
          }),
        ),
        clientsOf(
          second!,
          createGrpcTransport({ baseUrl: second!.base!, interceptors: [bearer(OPERATOR_TOKEN)] }),
        ),
      );
    }, 120_000);

    afterAll(async () => {
      for (const r of replicas) r.child.kill("SIGTERM");
      const codes = await Promise.all(replicas.map((r) => r.exited));
      await handler?.close();
      await states?.close();
      await database?.close();
      await scratch?.drop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      expect(codes).toEqual(replicas.map(() => 0));
    }, 60_000);

    it("drives calls created through either replica to COMPLETED and delivers each state update once", async () => {
      const setup = clients[0]!;
      // A worker serves nothing: its PORT is not listened on.
      for (const r of replicas.filter((r) => r.role === "worker")) {
        await expect(fetch(`http://127.0.0.1:${r.port}/readyz`)).rejects.toThrow();
      }
      const transport = createConnectTransport({
        baseUrl: replicas.find((r) => r.base !== undefined)!.base!,
        httpVersion: "1.1",
        interceptors: [bearer(OPERATOR_TOKEN)],
      });
      await createClient(Projects, transport).createProject({ projectId: PROJECT_ID });
      await createClient(NumberingAdmin, transport).createNumberBlock({
        numberBlock: {
          startPhoneNumber: FROM,
          size: 10,
          numberType: NumberType.LOCAL,
          capabilities: [Capability.VOICE],
          countryCode: "AU",
        },
      });
      await createClient(PhoneNumberInstances, transport).createPhoneNumberInstance({
        parent: PROJECT,
        phoneNumberInstance: { phoneNumber: { phoneNumber: FROM } },
      });
      // Rings 2 s and would talk an hour: the markup's end hangs up (COMPLETED).
      await createClient(SimulatorAdmin, transport).createRoute({
        route: { prefix: TO_PREFIX, ringSeconds: 2, talkSeconds: 3600 },
      });

      // Every request is attributed to its sender while its socket is open.
      handler.handle((req, res) => {
        record(handled, req, res.socket?.remotePort ?? 0, res.socket?.localPort ?? 0);
        res.setHeader("content-type", "application/xml");
        res.end(xml("<Say>Hello from the replicas test</Say>"));
      });
      states.handle((req, res) => {
        record(updates, req, res.socket?.remotePort ?? 0, res.socket?.localPort ?? 0);
        res.end("ok");
      });

      // Calls through every listening replica, at once.
      let n = 0;
      const created = await Promise.all(
        clients.flatMap((c, via) =>
          Array.from({ length: CALLS_PER_CLIENT }, async () => {
            const call = await c.calls.createCall({
              parent: PROJECT,
              call: {
                to: `${TO_PREFIX}${String(n++).padStart(2, "0")}`,
                from: FROM,
                options: {
                  handlerUris: [`${handler.base}/start`],
                  stateUpdateUri: `${states.base}/state`,
                  // Scaled: 6 s of wall time, far above the 2 s ring's 20 ms on a busy machine.
                  timeoutSeconds: 600,
                },
              },
            });
            expect(call.state).toBe(Call_State.QUEUED);
            return { name: call.name, via };
          }),
        ),
      );
      const total = clients.length * CALLS_PER_CLIENT;
      expect(new Set(created.map((c) => c.name)).size).toBe(total);

      // Each call ends, read through the other client (the other replica when there are two listening).
      const ended = new Map<string, Call>();
      for (const { name, via } of created) {
        const reader = clients[(via + 1) % clients.length]!;
        let call = await reader.calls.getCall({ name });
        for (let i = 0; i < 1200 && !TERMINAL.has(call.state); i++) {
          await sleep(50);
          call = await reader.calls.getCall({ name });
        }
        ended.set(name, call);
      }
      expect(
        [...ended.values()].map((c) => `${c.name} ${Call_State[c.state]} ${c.errorCode}`),
        replicas.map((r) => r.output()).join("\n"),
      ).toEqual(created.map((c) => `${c.name} COMPLETED `));

      // Every listening replica lists every call, COMPLETED.
      for (const c of clients) {
        const listed = await collectPages(async (pageToken) => {
          const page = await c.calls.listCalls({ parent: PROJECT, pageSize: 100, pageToken });
          return { items: page.calls, nextPageToken: page.nextPageToken };
        });
        expect(listed.items.map((call) => `${call.name} ${Call_State[call.state]}`).sort()).toEqual(
          created.map((call) => `${call.name} COMPLETED`).sort(),
        );
      }

      // Each call's control requests came from the replica that created it (its engine drives it).
      const drivers = new Map<string, Set<number | undefined>>();
      for (const h of handled) {
        const name = fromJsonString(CallRequestSchema, h.body).call?.name ?? "";
        drivers.set(name, (drivers.get(name) ?? new Set()).add(h.pid));
      }
      for (const { name, via } of created) {
        expect([...(drivers.get(name) ?? [])], name).toEqual([clients[via]!.replica.child.pid]);
      }

      // Every state update delivered: each event DELIVERED after one round of one attempt.
      const stateDeliveries = async (c: Clients): Promise<WebhookDelivery[]> =>
        (
          await collectPages(async (pageToken) => {
            const page = await c.deliveries.listWebhookDeliveries({
              parent: PROJECT,
              pageSize: 100,
              pageToken,
            });
            return { items: page.webhookDeliveries, nextPageToken: page.nextPageToken };
          })
        ).items.filter((d) => d.eventType === "CALL_STATE_UPDATE");
      let deliveries = await stateDeliveries(setup);
      for (
        let i = 0;
        i < 1200 &&
        (deliveries.length < total * STATES.length ||
          deliveries.some((d) => d.state !== WebhookDelivery_State.DELIVERED));
        i++
      ) {
        await sleep(50);
        deliveries = await stateDeliveries(setup);
      }
      expect(deliveries).toHaveLength(total * STATES.length);
      for (const d of deliveries) {
        expect(WebhookDelivery_State[d.state], d.name).toBe("DELIVERED");
        expect(d.roundCount, d.name).toBe(1);
        expect(
          d.attempts.map((a) => a.statusCode),
          d.name,
        ).toEqual([200]);
      }
      // The same through every listening replica.
      for (const c of clients) {
        expect(
          (await stateDeliveries(c)).map((d) => `${d.webhookId} ${WebhookDelivery_State[d.state]}`).sort(),
        ).toEqual(deliveries.map((d) => `${d.webhookId} DELIVERED`).sort());
      }

      // Received: exactly one request per attempt, i.e. per webhook-id (no replica sent one twice).
      const ids = updates.map((u) => String(u.headers["webhook-id"]));
      expect([...ids].sort()).toEqual(deliveries.map((d) => d.webhookId).sort());
      expect(new Set(ids).size).toBe(ids.length);

      // Signed, and per call in order: QUEUED, STARTING, RINGING, IN_PROGRESS, COMPLETED.
      const key = await keyOf(database.db, PROJECT);
      const sequence = new Map<string, string[]>();
      for (const u of updates) {
        expectSigned(
          { method: "POST", path: u.path, headers: u.headers, body: u.body },
          key,
          `${states.base}/state`,
          "CALL_STATE_UPDATE",
        );
        const call = fromJsonString(CallSchema, u.body);
        sequence.set(call.name, [...(sequence.get(call.name) ?? []), Call_State[call.state]]);
      }
      for (const { name } of created) expect(sequence.get(name), name).toEqual(STATES);

      // Who delivered: under api + worker, the worker alone; the api replica runs no webhook worker.
      const senders = new Set(updates.map((u) => u.from));
      if (roles.includes("worker")) expect([...senders]).toEqual(["worker"]);
      else expect([...senders].every((s) => s === "all")).toBe(true);
      console.info(
        `${roles.join(" + ")}: ${total} calls; state updates sent by pid ${[
          ...new Set(updates.map((u) => u.pid)),
        ].join(", ")} (replicas ${replicas.map((r) => `${r.role}=${r.child.pid}`).join(", ")})`,
      );

      // Nothing logged at error level by either replica.
      for (const r of replicas) {
        expect(
          logLines(r.output()).filter((l) => l.level >= 50),
          r.role,
        ).toEqual([]);
      }
    }, 180_000);
  });
  // Issue 32: recording audio on one bucket, replicas with data directories of their own (as on
  // two machines). A call recorded through one replica downloads through the other.
  describe("separate data directories sharing an S3 bucket (BLOB_STORE=s3)", () => {
    let scratch: { url: string; drop(): Promise<void> };
    let s3: TestS3;
    let handler: Receiver;
    const dataDirs: string[] = [];
    const pair: Replica[] = [];

    beforeAll(async () => {
      scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
      s3 = await startS3();
      handler = await startReceiver();
      for (const name of ["a", "b"]) {
        const dataDir = mkdtempSync(join(tmpdir(), `sb-replicas-s3-${name}-`));
        dataDirs.push(dataDir);
        const port = await freePort();
        const proc = launch(process.execPath, ["dist/server.js"], {
          HOST: "127.0.0.1",
          PORT: String(port),
          LOG_LEVEL: "info",
          ROLE: "all",
          DATABASE_URL: scratch.url,
          SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN,
          RECORDING_LINK_SECRET: "replicas-test-recording-secret-0123456789",
          DATA_DIR: dataDir,
          SIMULATOR_TIME_SCALE: "0.01",
          WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
          ...s3.env(),
        });
        pair.push({ ...proc, role: "all", port, base: `http://127.0.0.1:${port}` });
      }
      await Promise.all(pair.map((r) => untilReady(r)));
    }, 120_000);

    afterAll(async () => {
      for (const r of pair) r.child.kill("SIGTERM");
      const codes = await Promise.all(pair.map((r) => r.exited));
      await handler?.close();
      await scratch?.drop();
      await s3?.remove();
      for (const d of dataDirs) rmSync(d, { recursive: true, force: true });
      expect(codes).toEqual([0, 0]);
    }, 60_000);

    it("serves a recording made through one replica through the other", async () => {
      const [a, b] = pair as [Replica, Replica];
      const transport = (r: Replica) =>
        createConnectTransport({
          baseUrl: r.base!,
          httpVersion: "1.1",
          interceptors: [bearer(OPERATOR_TOKEN)],
        });
      await createClient(Projects, transport(b)).createProject({ projectId: PROJECT_ID });
      await createClient(NumberingAdmin, transport(b)).createNumberBlock({
        numberBlock: {
          startPhoneNumber: FROM,
          size: 10,
          numberType: NumberType.LOCAL,
          capabilities: [Capability.VOICE],
          countryCode: "AU",
        },
      });
      await createClient(PhoneNumberInstances, transport(b)).createPhoneNumberInstance({
        parent: PROJECT,
        phoneNumberInstance: { phoneNumber: { phoneNumber: FROM } },
      });
      await createClient(SimulatorAdmin, transport(b)).createRoute({
        route: { prefix: TO_PREFIX, ringSeconds: 1, talkSeconds: 3600, audio: SimulatorRoute_Audio.SPEECH },
      });
      handler.handle((_req, res) => {
        res.setHeader("content-type", "application/xml");
        res.end(xml("<Say>This call is recorded on one replica and heard on the other</Say>"));
      });

      // Through B, recorded from the answer.
      const call = await createClient(Calls, transport(b)).createCall({
        parent: PROJECT,
        call: {
          to: `${TO_PREFIX}01`,
          from: FROM,
          options: {
            handlerUris: [`${handler.base}/start`],
            recording: { trigger: Trigger.ANSWER },
            timeoutSeconds: 600,
          },
        },
      });
      const throughA = createClient(Recordings, transport(a));
      let recording: Recording | undefined;
      for (let i = 0; i < 1200; i++) {
        const listed = await throughA.listRecordings({ parent: call.name, view: RecordingView.FULL });
        recording = listed.recordings[0];
        if (recording !== undefined && recording.state !== Recording_State.PENDING) break;
        await sleep(50);
      }
      expect(Recording_State[recording?.state ?? 0], pair.map((r) => r.output()).join("\n")).toBe(
        "SUCCEEDED",
      );
      const wav = (await throughA.getRecording({ name: recording!.name })).audio.find(
        (x) => x.mimeType === "audio/x-wav",
      )!;

      // The link, issued and served by A (which recorded nothing): the audio B stored in the bucket.
      const whole = await fetch(`${a.base}${wav.uri}`);
      expect(whole.status).toBe(200);
      const bytes = Buffer.from(await whole.arrayBuffer());
      expect(bytes.length).toBe(wav.sizeBytes);
      expect(bytes.subarray(0, 4).toString("latin1")).toBe("RIFF");
      const part = await fetch(`${a.base}${wav.uri}`, { headers: { range: "bytes=0-11" } });
      expect(part.status).toBe(206);
      expect(part.headers.get("content-range")).toBe(`bytes 0-11/${wav.sizeBytes}`);
      expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(0, 12))).toBe(true);
      // And through B alike.
      const viaB = await fetch(`${b.base}${wav.uri}`);
      expect(Buffer.from(await viaB.arrayBuffer()).equals(bytes)).toBe(true);

      // On a bucket, no replica warns about BLOB_DIR, and /readyz has nothing to add.
      for (const r of pair) {
        expect(await (await fetch(`${r.base}/readyz`)).json()).toEqual({ status: "SERVING" });
        expect(logLines(r.output()).filter((l) => l.setting === "BLOB_STORE")).toEqual([]);
        expect(logLines(r.output()).filter((l) => l.level >= 50)).toEqual([]);
        expect(logLines(r.output()).find((l) => l.msg === "blob store opened")).toMatchObject({
          blobStore: "s3",
          bucket: s3.bucket,
        });
      }
    }, 180_000);
  });
});
