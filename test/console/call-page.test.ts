/**
 * A call's page in headless Chromium against the real app: a call placed
 * from the console, recorded and transcribed, shows its recording with the
 * transcription beside the player once it completes, and can be deleted
 * (asked to confirm) by a key that may; a PSTN call has no
 * SIP dialogue section; a viewer sees the same page and no Place call
 * form or Delete. axe-core, 375 px and screenshots.
 *
 * The simulator runs in real time, so that the callee's words (0.4 s each)
 * fit in the recording: the call lasts about 4 s. Without Chromium this
 * test FAILS (it never skips).
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatorAdmin, SimulatorRoute_Audio } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { systemClock } from "../../src/clock.js";
import { addBlock, blockAllocator, numberingClients, provision } from "../numbering/support.js";
import { createTestClient, newApiKey, newProject } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import {
  type ConsoleHarness,
  newTab,
  openPage,
  pageProblems,
  screenshot,
  seriousViolations,
  signIn,
  startConsole,
} from "./support.js";

const CALLEE = "+61491570158";
const WORDS = "the console shows what was said";

describe.each(testDatabases().slice(0, 1))("the console's call page ($name)", (backend) => {
  const database = useTestDatabase(backend);
  let h: ConsoleHarness | undefined;
  let handler: Receiver | undefined;
  let projectId = "";
  let owner = "";
  let viewer = "";
  let number = "";
  let setupError: unknown;

  beforeAll(async () => {
    try {
      h = await startConsole(database.db, { WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true" });
      handler = await startReceiver();
      handler.handle((_req, res) => {
        res.setHeader("content-type", "application/xml");
        res.end(xml('<Wait Seconds="10"/>'));
      });
      const project = await newProject(database.db);
      projectId = project.slice("projects/".length);
      owner = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
      viewer = (await newApiKey(database.db, [{ project, roles: ["roles/viewer"] }])).secret;
      const numbering = numberingClients(database.db, systemClock);
      number = await addBlock(numbering, blockAllocator()(), 1);
      await provision(numbering, project, number);
      await createTestClient(SimulatorAdmin, database.db, systemClock).createRoute({
        route: {
          prefix: CALLEE,
          ringSeconds: 0,
          talkSeconds: 4,
          audio: SimulatorRoute_Audio.SPEECH,
          words: WORDS,
        },
      });
    } catch (err) {
      setupError = err;
    }
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    await handler?.close();
  });

  function ready(): ConsoleHarness {
    if (setupError !== undefined) throw setupError;
    if (h === undefined) throw new Error("setup did not run");
    return h;
  }

  async function check(page: Page, name: string, width: number): Promise<void> {
    await screenshot(page, name);
    expect(await seriousViolations(page), `axe on ${name}`).toEqual([]);
    const scrollWidth = await page.evaluate(
      () =>
        (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document
          .documentElement.scrollWidth,
    );
    expect(scrollWidth, `${name} scrolls sideways`).toBeLessThanOrEqual(width);
  }

  it("shows a recorded call's transcription beside its recording", async () => {
    const h = ready();
    let callId = "";
    const { close, page, logs } = await newTab(h);
    try {
      await signIn(page, h.baseUrl, owner, projectId);
      await openPage(page, "#/calls", "Calls");
      await page.getByLabel("To", { exact: true }).fill(CALLEE);
      await page.getByLabel("From (a number of the project)").fill(number);
      await page.getByLabel("Handler URI (VoiceML)").fill(`${handler!.base}/voice`);
      // Transcribing is offered once recording is asked for.
      expect(await page.getByLabel("Transcribe the recording").count()).toBe(0);
      await page.getByLabel("Record the call from its answer").check();
      await page.getByLabel("Transcribe the recording").check();
      await page.getByRole("button", { name: "Place call" }).click();
      const placed = page.getByRole("status").getByRole("link");
      await placed.waitFor();
      callId = (await placed.textContent()) ?? "";
      await placed.click();
      await page.getByRole("heading", { level: 1, name: `Call ${callId}` }).waitFor();
      await expect
        .poll(() => page.getByTestId("call-state").textContent(), { timeout: 30_000 })
        .toBe("COMPLETED");
      // A PSTN call: no SIP dialogue.
      expect(await page.getByRole("heading", { name: "SIP dialogue" }).count()).toBe(0);
      const transcript = page.getByRole("region", { name: /^Transcription of recording / });
      await transcript.getByText(WORDS).first().waitFor({ timeout: 30_000 });
      // Beside the player: the same list item holds both. The two lists are
      // read apart, so the transcription can show a poll before the
      // recording's READY row brings its player.
      const item = page.locator("li.recording").filter({ has: transcript });
      await item.locator("audio").first().waitFor({ timeout: 10_000 });
      expect(await item.locator("audio").count()).toBe(1);
      await check(page, "owner-call-transcribed", 1100);
      expect(pageProblems(logs)).toEqual([]);
    } catch (err) {
      await screenshot(page, "call-page-failure").catch(() => {});
      throw err;
    } finally {
      await close();
    }

    const v = await newTab(h, { width: 375, dark: true });
    try {
      await signIn(v.page, h.baseUrl, viewer, projectId);
      await openPage(v.page, "#/calls", "Calls");
      expect(await v.page.getByRole("form", { name: "Place a call" }).count()).toBe(0);
      await openPage(v.page, `#/call/${callId}`, `Call ${callId}`);
      await v.page
        .getByRole("region", { name: /^Transcription of recording / })
        .getByText(WORDS)
        .first()
        .waitFor();
      expect(await v.page.getByRole("button", { name: /^Delete recording / }).count()).toBe(0);
      await check(v.page, "viewer-call-transcribed-375-dark", 375);
      expect(pageProblems(v.logs)).toEqual([]);
    } finally {
      await v.close();
    }

    // The owner deletes the recording (asked to confirm); its transcription goes with it.
    const o = await newTab(h);
    try {
      await signIn(o.page, h.baseUrl, owner, projectId);
      await openPage(o.page, `#/call/${callId}`, `Call ${callId}`);
      await o.page.getByRole("button", { name: /^Delete recording / }).click();
      await o.page.getByRole("button", { name: /^Confirm: delete recording / }).click();
      await o.page.getByText("No recordings").waitFor();
      expect(await o.page.getByRole("region", { name: /^Transcription of recording / }).count()).toBe(0);
      expect(pageProblems(o.logs)).toEqual([]);
    } finally {
      await o.close();
    }
  });
});
