/**
 * Numbers carry only the traffic their capabilities allow: a call to or from
 * an SMS-only number is refused (FAILED_PRECONDITION NUMBER_NOT_VOICE_CAPABLE)
 * and nothing is recorded. (Messages to voice-only numbers:
 * test/messaging/incoming-messages.test.ts.)
 */
import { Code } from "@connectrpc/connect";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { SimulatorAdmin } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { calls } from "../../src/db/schema/index.js";
import { addBlock, Capability, numberingClients } from "../numbering/support.js";
import { errorReason, expectCode, newProject } from "../support/app.js";
import { callHarness } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

const CALLER = "+61491570156";

describe.each(testDatabases())("number capabilities on $name", (backend) => {
  const database = useTestDatabase(backend);
  const harness = callHarness(database);
  const simulator = harness.client(SimulatorAdmin);

  /** A project holding a fresh SMS-only number (with a call handler, so only the capability is missing). */
  async function smsOnly(): Promise<{ project: string; number: string }> {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, harness.scheduler.clock);
    const number = await addBlock(c, harness.nextBlock(), 10, { capabilities: [Capability.SMS] });
    await c.instances.createPhoneNumberInstance({
      parent: project,
      phoneNumberInstance: {
        phoneNumber: { phoneNumber: number },
        incomingCallHandlerUris: [`${harness.handler.base}/start`],
      },
    });
    return { project, number };
  }

  async function callsOf(project: string) {
    return database.db
      .select()
      .from(calls)
      .where(eq(calls.projectId, project.split("/")[1]!));
  }

  it("refuses an incoming call to an SMS-only number: NUMBER_NOT_VOICE_CAPABLE, nothing recorded", async () => {
    const { project, number } = await smsOnly();
    const e = await expectCode(
      simulator.injectIncomingCall({ to: number, from: CALLER }),
      Code.FailedPrecondition,
    );
    expect(errorReason(e)).toBe("NUMBER_NOT_VOICE_CAPABLE");
    expect(e.findDetails(ErrorInfoSchema)[0]?.metadata).toMatchObject({
      phone_number: number,
      capability: "VOICE",
    });
    expect(await callsOf(project)).toEqual([]);
    expect(harness.handler.requests).toEqual([]);
  });

  it("refuses CreateCall from an SMS-only number: NUMBER_NOT_VOICE_CAPABLE naming call.from", async () => {
    const { project, number } = await smsOnly();
    const to = await harness.route({});
    const e = await expectCode(harness.createCall(project, number, to), Code.FailedPrecondition);
    expect(errorReason(e)).toBe("NUMBER_NOT_VOICE_CAPABLE");
    expect(e.findDetails(ErrorInfoSchema)[0]?.metadata).toMatchObject({ field: "call.from" });
    expect(await callsOf(project)).toEqual([]);
  });

  it("still connects calls from VOICE numbers", async () => {
    const { project, from } = await harness.owner();
    const created = await harness.createCall(project, from, await harness.route({}));
    expect(created.name).toMatch(/calls\//);
    await harness.runToEnd(created.name);
  });
});
