/**
 * The data plumbing of call recording: what a call stores in
 * `calls.recording` (CreateCall's options.recording, an incoming number
 * call's instance call_recording_trigger, a SIP domain call's domain
 * call_recording), its echo in Call.options, the handler URIs and plan of an
 * incoming number call, and the SIP channel_limit under simultaneous calls.
 * The real app (build()) on 127.0.0.1, clients over Connect JSON and REST;
 * call time never advances, so the calls created stay in progress.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { type Client, Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PhoneNumberInstance_RecordingTrigger as InstanceTrigger } from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import {
  type CallRecordingConfigSchema,
  PostProcessing,
  TranscribeOption,
  CallRecordingConfig_CallRecordingTrigger as Trigger,
} from "../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import { Call_CreateMethod, CallSchema, Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  SipDomain_DomainType as DomainType,
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SimulatorAdmin } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { type CallRow, calls } from "../../src/db/schema/index.js";
import { numberingDomains } from "../../src/numbering/domains.js";
import { type App, build } from "../../src/server.js";
import type { CallPlan, CallStarter } from "../../src/voice/calls/domain.js";
import { IncomingCalls } from "../../src/voice/calls/incoming.js";
import { SipDomainsDomain } from "../../src/voice/sip-domains/domain.js";
import { VoiceStore } from "../../src/voice/sip-domains/repository.js";
import { addBlock, blockAllocator, numberingClients, provision } from "../numbering/support.js";
import {
  bearer,
  errorReason,
  expectCode,
  expectInvalid,
  newProject,
  TEST_OPERATOR_TOKEN,
  testConfig,
} from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { ManualScheduler } from "../support/scheduler.js";
import { newSipDomainId } from "./support.js";

const T0 = "2026-03-01T00:00:00.000Z";
const CALLER = "+61491570156";
const READY = "https://hooks.example.com/ready?x=1";
const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?><Response>${body}</Response>`;

interface RestError {
  error: {
    code: number;
    status: string;
    details: { reason?: string; fieldViolations?: { field: string }[] }[];
  };
}

describe.each(testDatabases())("call recording configuration on $name", (backend) => {
  const database = useTestDatabase(backend);
  const scheduler = new ManualScheduler(new TestClock(T0));
  const nextBlock = blockAllocator();
  let app: App;
  let base: string;
  let callsClient: Client<typeof Calls>;
  let simulator: Client<typeof SimulatorAdmin>;
  let sip: Client<typeof SipDomains>;
  let handler: Receiver;
  const auth = { authorization: `Bearer ${TEST_OPERATOR_TOKEN}`, "content-type": "application/json" };

  beforeAll(async () => {
    app = await build({
      db: database.db,
      clock: scheduler.clock,
      scheduler,
      config: testConfig({ WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true", WEBHOOKS_TIMEOUT_MS: "2000" }),
    });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
    const transport = createConnectTransport({
      baseUrl: base,
      httpVersion: "1.1",
      interceptors: [bearer(TEST_OPERATOR_TOKEN)],
    });
    callsClient = createClient(Calls, transport);
    simulator = createClient(SimulatorAdmin, transport);
    sip = createClient(SipDomains, transport);
    handler = await startReceiver();
    handler.handle((_req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(xml('<Wait Seconds="60"/>'));
    });
  });
  afterAll(async () => {
    await app?.close();
    await handler?.close();
  });

  async function row(name: string): Promise<CallRow> {
    const [r] = await database.db
      .select()
      .from(calls)
      .where(eq(calls.id, name.split("/")[3]!));
    return r!;
  }

  async function projectCalls(project: string): Promise<number> {
    return (
      await database.db
        .select()
        .from(calls)
        .where(eq(calls.projectId, project.split("/")[1]!))
    ).length;
  }

  describe("CreateCall: options.recording", () => {
    async function owner(): Promise<{ project: string; from: string }> {
      const project = await newProject(database.db);
      const c = numberingClients(database.db, scheduler.clock);
      const from = await addBlock(c, nextBlock(), 10);
      await provision(c, project, from);
      return { project, from };
    }
    const TO = "+61491570199";

    it("ANSWER / BRIDGE are stored and echoed (Connect); DISABLED, UNSPECIFIED and unset store nothing", async () => {
      const { project, from } = await owner();
      const created = await callsClient.createCall({
        parent: project,
        call: create(CallSchema, {
          to: TO,
          from,
          options: {
            handlerUris: [`${handler.base}/start`],
            recording: {
              trigger: Trigger.ANSWER,
              postProcessing: [PostProcessing.TRIM_SILENCE, PostProcessing.TRIM_SILENCE],
              recordingReadyUri: READY,
              transcribe: TranscribeOption.DISABLED,
            },
          },
        }),
      });
      const expected = {
        trigger: Trigger.ANSWER,
        postProcessing: [PostProcessing.TRIM_SILENCE],
        recordingReadyUri: READY,
        transcribe: TranscribeOption.TRANSCRIBE_OPTION_UNSPECIFIED,
        transcriptionReadyUri: "",
      };
      expect(created.options?.recording).toMatchObject(expected);
      expect((await callsClient.getCall({ name: created.name })).options?.recording).toMatchObject(expected);
      expect((await row(created.name)).recording).toEqual({
        trigger: "ANSWER",
        postProcessing: ["TRIM_SILENCE"],
        readyUri: READY,
      });

      const bridge = await callsClient.createCall({
        parent: project,
        call: {
          to: TO,
          from,
          options: { handlerUris: [`${handler.base}/start`], recording: { trigger: Trigger.BRIDGE } },
        },
      });
      expect(bridge.options?.recording).toMatchObject({
        trigger: Trigger.BRIDGE,
        postProcessing: [],
        recordingReadyUri: "",
      });
      expect((await row(bridge.name)).recording).toEqual({
        trigger: "BRIDGE",
        postProcessing: [],
        readyUri: "",
      });

      for (const recording of [
        { trigger: Trigger.DISABLED, recordingReadyUri: READY },
        {
          trigger: Trigger.CALL_RECORDING_TRIGGER_UNSPECIFIED,
          postProcessing: [PostProcessing.TRIM_SILENCE],
        },
        undefined,
      ]) {
        const off = await callsClient.createCall({
          parent: project,
          call: { to: TO, from, options: { handlerUris: [`${handler.base}/start`], recording } },
        });
        expect(off.options?.recording).toBeUndefined();
        expect(off.options?.handlerUris).toEqual([`${handler.base}/start`]);
        expect((await row(off.name)).recording).toBeNull();
      }
    });

    it("REST: stored and echoed as proto3 JSON", async () => {
      const { project, from } = await owner();
      const res = await fetch(`${base}/v1beta1/${project}/calls`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({
          to: TO,
          from,
          options: {
            handlerUris: [`${handler.base}/start`],
            recording: { trigger: "BRIDGE", postProcessing: ["TRIM_SILENCE"], recordingReadyUri: READY },
          },
        }),
      });
      expect(res.status).toBe(200);
      const created = (await res.json()) as { name: string; options: { recording: unknown } };
      const json = { trigger: "BRIDGE", postProcessing: ["TRIM_SILENCE"], recordingReadyUri: READY };
      expect(created.options.recording).toEqual(json);
      const got = await fetch(`${base}/v1beta1/${created.name}`, { headers: auth });
      expect(((await got.json()) as { options: { recording: unknown } }).options.recording).toEqual(json);
      expect((await row(created.name)).recording).toEqual({
        trigger: "BRIDGE",
        postProcessing: ["TRIM_SILENCE"],
        readyUri: READY,
      });
    });

    it("a bad recording_ready_uri is INVALID_ARGUMENT naming it (Connect and REST); nothing is created", async () => {
      const { project, from } = await owner();
      for (const uri of ["ftp://hooks.example.com/ready", "not a uri", "/relative/ready"]) {
        await expectInvalid(
          callsClient.createCall({
            parent: project,
            call: {
              to: TO,
              from,
              options: {
                handlerUris: [`${handler.base}/start`],
                recording: { trigger: Trigger.ANSWER, recordingReadyUri: uri },
              },
            },
          }),
          ["call.options.recording.recording_ready_uri"],
        );
        const res = await fetch(`${base}/v1beta1/${project}/calls`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({
            to: TO,
            from,
            options: {
              handlerUris: [`${handler.base}/start`],
              recording: { trigger: "ANSWER", recordingReadyUri: uri },
            },
          }),
        });
        expect(res.status).toBe(400);
        const body = (await res.json()) as RestError;
        expect(body.error.status).toBe("INVALID_ARGUMENT");
        const fields = body.error.details.flatMap((d) => d.fieldViolations ?? []).map((v) => v.field);
        // protovalidate may report the URI rule and the http(s) pattern separately.
        expect([...new Set(fields)]).toEqual(["call.options.recording.recording_ready_uri"]);
      }
      // The transcription URI is checked the same way (as a SIP domain's is).
      await expectInvalid(
        callsClient.createCall({
          parent: project,
          call: {
            to: TO,
            from,
            options: {
              handlerUris: [`${handler.base}/start`],
              recording: { trigger: Trigger.ANSWER, transcriptionReadyUri: "ftp://x.example.com/t" },
            },
          },
        }),
        ["call.options.recording.transcription_ready_uri"],
      );
      // POST_PROCESSING_UNSPECIFIED is not a processing.
      await expectInvalid(
        callsClient.createCall({
          parent: project,
          call: {
            to: TO,
            from,
            options: {
              handlerUris: [`${handler.base}/start`],
              recording: {
                trigger: Trigger.ANSWER,
                postProcessing: [PostProcessing.TRIM_SILENCE, PostProcessing.POST_PROCESSING_UNSPECIFIED],
              },
            },
          },
        }),
        ["call.options.recording.post_processing[1]"],
      );
      expect(await projectCalls(project)).toBe(0);
    });

    it("transcription asked for is accepted and read back (Connect and REST)", async () => {
      const { project, from } = await owner();
      for (const trigger of [Trigger.ANSWER, Trigger.DISABLED]) {
        const call = await callsClient.createCall({
          parent: project,
          call: {
            to: TO,
            from,
            options: {
              handlerUris: [`${handler.base}/start`],
              recording: {
                trigger,
                transcribe: TranscribeOption.DEFAULT,
                transcriptionReadyUri: "https://hooks.example.com/t",
              },
            },
          },
        });
        if (trigger === Trigger.ANSWER) {
          expect(call.options?.recording?.transcribe).toBe(TranscribeOption.DEFAULT);
          expect(call.options?.recording?.transcriptionReadyUri).toBe("https://hooks.example.com/t");
        } else {
          // DISABLED records nothing, so there is nothing to transcribe.
          expect(call.options?.recording).toBeUndefined();
        }
      }
      const res = await fetch(`${base}/v1beta1/${project}/calls`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({
          to: TO,
          from,
          options: {
            handlerUris: [`${handler.base}/start`],
            recording: { trigger: "BRIDGE", transcribe: "DEFAULT" },
          },
        }),
      });
      expect(res.status).toBe(200);
      const created = (await res.json()) as { options: { recording: { transcribe: string } } };
      expect(created.options.recording.transcribe).toBe("DEFAULT");
      // A bad URI beside it is still INVALID_ARGUMENT, and creates nothing.
      const before = await projectCalls(project);
      await expectInvalid(
        callsClient.createCall({
          parent: project,
          call: {
            to: TO,
            from,
            options: {
              handlerUris: [`${handler.base}/start`],
              recording: {
                trigger: Trigger.ANSWER,
                transcribe: TranscribeOption.DEFAULT,
                recordingReadyUri: "x",
              },
            },
          },
        }),
        ["call.options.recording.recording_ready_uri"],
      );
      expect(await projectCalls(project)).toBe(before);
    });
  });

  describe("incoming number calls", () => {
    async function single(
      uris: string[],
      trigger?: InstanceTrigger,
    ): Promise<{ project: string; number: string }> {
      const project = await newProject(database.db);
      const c = numberingClients(database.db, scheduler.clock);
      const number = await addBlock(c, nextBlock(), 10);
      await c.instances.createPhoneNumberInstance({
        parent: project,
        phoneNumberInstance: {
          phoneNumber: { phoneNumber: number },
          incomingCallHandlerUris: uris,
          ...(trigger === undefined ? {} : { callRecordingTrigger: trigger }),
        },
      });
      return { project, number };
    }

    it("take the instance's call_recording_trigger; no options", async () => {
      for (const [trigger, expected] of [
        [InstanceTrigger.ANSWER, { trigger: "ANSWER", postProcessing: [], readyUri: "" }],
        [InstanceTrigger.BRIDGE, { trigger: "BRIDGE", postProcessing: [], readyUri: "" }],
        [InstanceTrigger.DISABLED, null],
        [undefined, null],
      ] as const) {
        const { number } = await single([`${handler.base}/in`], trigger);
        const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
        expect((await row(res.call)).recording).toEqual(expected);
        const call = await callsClient.getCall({ name: res.call });
        expect(call.createMethod).toBe(Call_CreateMethod.INCOMING_CALL);
        expect(call.options).toBeUndefined();
      }
    });

    it("copy all handler URIs, markup and forwarding alike, in order, with plan control", async () => {
      const uris = [
        `${handler.base}/first`,
        "tel:+61491570190",
        `${handler.base}/second`,
        "sip:desk@pbx.example.com",
      ];
      const forwardFirst = ["tel:+61491570191", "sip:desk@pbx.example.com", `${handler.base}/last`];
      const { number } = await single(uris, InstanceTrigger.ANSWER);
      const other = await single(forwardFirst);
      expect(
        (await row((await simulator.injectIncomingCall({ to: number, from: CALLER })).call)).handlerUris,
      ).toEqual(uris);
      expect(
        (await row((await simulator.injectIncomingCall({ to: other.number, from: CALLER })).call))
          .handlerUris,
      ).toEqual(forwardFirst);

      // The plan handed to the engine, and when: after the row is there.
      const started: { row: CallRow; plan: CallPlan | undefined; visible: boolean }[] = [];
      const engine: CallStarter = {
        registeredId: () => Promise.resolve("engine-test"),
        start: (r, plan) => {
          started.push({ row: r, plan, visible: false });
        },
        inDoubt: () => {},
      };
      const incoming = new IncomingCalls({
        db: database.db,
        numbers: numberingDomains(database.db, scheduler.clock, { numberQuarantineSeconds: 0 }).instances,
        clock: scheduler.clock,
        engine,
        sipDomains: { resolveSipCall: () => Promise.reject(new Error("not a SIP call")) },
      });
      for (const to of [number, other.number]) {
        await incoming.receive({ to, from: CALLER, isPrivate: false, sipDomain: "", sourceIp: "", user: "" });
      }
      expect(started.map((s) => s.plan)).toEqual([{ kind: "control" }, { kind: "control" }]);
      expect(started.map((s) => s.row.handlerUris)).toEqual([uris, forwardFirst]);
      expect(started.map((s) => s.row.recording)).toEqual([
        { trigger: "ANSWER", postProcessing: [], readyUri: "" },
        null,
      ]);
      // The row handed to the engine is built, not read back: it is what the database stores, every column.
      for (const s of started) {
        const [stored] = await database.db.select().from(calls).where(eq(calls.id, s.row.id));
        expect(s.row).toEqual(stored);
      }
    });
  });

  describe("incoming SIP domain calls", () => {
    const SOURCE = "203.0.113.10";

    async function sipDomain(init: Parameters<typeof sip.createSipDomain>[0]["sipDomain"]) {
      const project = await newProject(database.db);
      const domain = await sip.createSipDomain({
        parent: project,
        sipDomainId: newSipDomainId("rec"),
        sipDomain: init,
      });
      return { project, domain };
    }

    it("take the domain's call_recording (ANSWER / BRIDGE); none or DISABLED stores nothing", async () => {
      const cases: [MessageInitShape<typeof CallRecordingConfigSchema> | undefined, unknown][] = [
        [
          {
            trigger: Trigger.BRIDGE,
            postProcessing: [PostProcessing.TRIM_SILENCE],
            recordingReadyUri: READY,
          },
          { trigger: "BRIDGE", postProcessing: ["TRIM_SILENCE"], readyUri: READY },
        ],
        [{ trigger: Trigger.ANSWER }, { trigger: "ANSWER", postProcessing: [], readyUri: "" }],
        [{ trigger: Trigger.DISABLED, recordingReadyUri: READY }, null],
        [undefined, null],
      ];
      for (const [callRecording, expected] of cases) {
        const { domain } = await sipDomain({
          callTerminationMode: Mode.PROGRAMMABLE,
          callTerminationHandlerUris: [`${handler.base}/sip`],
          cidrBlocks: [{ cidrBlock: "203.0.113.0/24" }],
          ...(callRecording === undefined ? {} : { callRecording }),
        });
        const res = await simulator.injectIncomingCall({
          to: "1001",
          from: "alice",
          sipDomain: domain.fqdn,
          sourceIp: SOURCE,
        });
        const r = await row(res.call);
        expect(r.transport).toBe("SIP");
        expect(r.recording).toEqual(expected);
        expect((await callsClient.getCall({ name: res.call })).options).toBeUndefined();
      }
    });

    it("a domain asking for transcription is accepted on create and update", async () => {
      const { domain: created } = await sipDomain({
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: ["https://hooks.example.com/sip"],
        callRecording: { trigger: Trigger.ANSWER, transcribe: TranscribeOption.DEFAULT },
      });
      expect(created.callRecording?.transcribe).toBe(TranscribeOption.DEFAULT);

      const { domain } = await sipDomain({
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: ["https://hooks.example.com/sip"],
        callRecording: { trigger: Trigger.ANSWER },
      });
      const updated = await sip.updateSipDomain({
        sipDomain: {
          name: domain.name,
          callRecording: { trigger: Trigger.BRIDGE, transcribe: TranscribeOption.DEFAULT },
        },
        updateMask: { paths: ["call_recording"] },
      });
      expect(updated.callRecording?.transcribe).toBe(TranscribeOption.DEFAULT);
      const after = await sip.getSipDomain({ name: domain.name });
      expect(after.callRecording?.trigger).toBe(Trigger.BRIDGE);
      expect(after.callRecording?.transcribe).toBe(TranscribeOption.DEFAULT);
    });

    it("channel_limit k: 3k simultaneous calls admit exactly k, the rest CHANNEL_LIMIT_REACHED", async () => {
      for (const k of [1, 3]) {
        const { project, domain } = await sipDomain({
          type: DomainType.COLLAB_DIRECT_ROUTING,
          channelLimit: k,
          callTerminationMode: Mode.PROGRAMMABLE,
          callTerminationHandlerUris: [`${handler.base}/long`],
        });
        const results = await Promise.allSettled(
          Array.from({ length: 3 * k }, () =>
            simulator.injectIncomingCall({
              to: "+61491570156",
              sipDomain: domain.fqdn,
              sourceIp: "198.51.100.20",
            }),
          ),
        );
        const accepted = results.filter((r) => r.status === "fulfilled");
        const refused = results.flatMap((r) => (r.status === "rejected" ? [r.reason] : []));
        expect(accepted).toHaveLength(k);
        expect(refused).toHaveLength(2 * k);
        for (const e of refused) {
          expect(Code[e.code]).toBe(Code[Code.FailedPrecondition]);
          expect(errorReason(e)).toBe("CHANNEL_LIMIT_REACHED");
        }
        expect(await projectCalls(project)).toBe(k);
      }
    });

    it("PSTN_TRUNK under a channel_limit keeps its bridge plan; the engine starts after the commit", async () => {
      const { domain } = await sipDomain({
        type: DomainType.COLLAB_DIRECT_ROUTING,
        channelLimit: 2,
        callTerminationMode: Mode.PSTN_TRUNK,
        callRecording: { trigger: Trigger.ANSWER },
      });
      const plans: (CallPlan | undefined)[] = [];
      const checks: Promise<number>[] = [];
      const incoming = new IncomingCalls({
        db: database.db,
        numbers: numberingDomains(database.db, scheduler.clock, { numberQuarantineSeconds: 0 }).instances,
        clock: scheduler.clock,
        engine: {
          registeredId: () => Promise.resolve("engine-test"),
          inDoubt: () => {},
          start: (r, plan) => {
            plans.push(plan);
            // On PGlite a query from inside the transaction would deadlock; the
            // row must already be committed and visible to the outer database.
            checks.push(
              database.db
                .select()
                .from(calls)
                .where(eq(calls.id, r.id))
                .then((rows) => rows.length),
            );
          },
        },
        sipDomains: new SipDomainsDomain(
          new VoiceStore(database.db),
          scheduler.clock,
          testConfig().sipDomains,
        ),
      });
      const input = {
        to: "+61491570177",
        from: "+61255501234",
        isPrivate: false,
        sipDomain: domain.fqdn,
        sourceIp: "198.51.100.20",
        user: "",
      };
      const first = await incoming.receive(input);
      expect(first.recording).toEqual({ trigger: "ANSWER", postProcessing: [], readyUri: "" });
      // Inserted inside the admission's transaction: the row returned is the one stored, every column.
      expect(first).toEqual((await database.db.select().from(calls).where(eq(calls.id, first.id)))[0]);
      await incoming.receive(input);
      const e = await expectCode(incoming.receive(input), Code.FailedPrecondition);
      expect(errorReason(e)).toBe("CHANNEL_LIMIT_REACHED");
      expect(plans).toEqual([
        { kind: "bridge", to: "+61491570177", from: "+61255501234" },
        { kind: "bridge", to: "+61491570177", from: "+61255501234" },
      ]);
      expect(await Promise.all(checks)).toEqual([1, 1]);
    });
  });
});
