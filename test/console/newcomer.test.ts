/**
 * The console in headless Chromium, a newcomer's path end to end on the
 * real app: sign in with the operator token, create a project and an API
 * key (its secret shown once), sign in with the key, find and provision a
 * number, place a call and watch it reach COMPLETED without reloading,
 * play its recording, and redeliver one of its webhooks. Each page is
 * screenshotted (test-artifacts/console/) and checked with axe-core.
 *
 * The simulator runs at SIMULATOR_TIME_SCALE 0.05 (a simulated second is
 * 50 ms), so the call takes well under a second of wall-clock time.
 *
 * Without Chromium this test FAILS (it never skips).
 */
import { randomBytes } from "node:crypto";
import { and, eq } from "drizzle-orm";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatorAdmin, SimulatorRoute_Audio } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { systemClock } from "../../src/clock.js";
import { webhookEvents } from "../../src/db/schema/index.js";
import { addBlock, blockAllocator, numberingClients } from "../numbering/support.js";
import { createTestClient, TEST_OPERATOR_TOKEN } from "../support/app.js";
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
} from "./support.js";

const CALLEE = "+61491570157";

/** What the test reads of an <audio> element (the test's types have no DOM). */
interface AudioLike {
  muted: boolean;
  readyState: number;
  error: { code: number } | null;
  play(): Promise<void>;
}

describe.each(testDatabases().slice(0, 1))("the console: a newcomer's path ($name)", (backend) => {
  const database = useTestDatabase(backend);
  let h: ConsoleHarness | undefined;
  let handler: Receiver | undefined;
  let setupError: unknown;
  /** The state update handler answers 503 while true. */
  let stateDown = true;

  beforeAll(async () => {
    try {
      const { startConsole } = await import("./support.js");
      h = await startConsole(database.db, {
        SIMULATOR_TIME_SCALE: "0.05",
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
      });
      handler = await startReceiver();
      handler.handle((req, res) => {
        if (req.path.startsWith("/voice")) {
          res.setHeader("content-type", "application/xml");
          res.end(xml('<Say>Hello from Switchboard.</Say><Wait Seconds="1"/>'));
        } else if (req.path === "/state" && stateDown) {
          res.statusCode = 503;
          res.end("down");
        } else res.end("ok");
      });
      // The operator's inventory and the called party (set up through the API: not the path under test).
      await addBlock(numberingClients(database.db, systemClock), blockAllocator()(), 10);
      await createTestClient(SimulatorAdmin, database.db, systemClock).createRoute({
        route: { prefix: CALLEE, ringSeconds: 1, talkSeconds: 5, audio: SimulatorRoute_Audio.SPEECH },
      });
    } catch (err) {
      setupError = err;
    }
  }, 120_000);

  afterAll(async () => {
    await handler?.close();
    await h?.close();
  });

  function ready(): { h: ConsoleHarness; handler: Receiver } {
    if (setupError !== undefined) throw setupError;
    if (h === undefined || handler === undefined) throw new Error("setup did not run");
    return { h, handler };
  }

  async function check(page: Page, name: string): Promise<void> {
    await screenshot(page, name);
    expect(await seriousViolations(page), `axe on ${name}`).toEqual([]);
  }

  /** The page at 375 px wide: screenshot, axe, no sideways scrolling; then back to the desktop width. */
  async function checkNarrow(page: Page, name: string): Promise<void> {
    await page.setViewportSize({ width: 375, height: 900 });
    try {
      await check(page, name);
      const width = await page.evaluate(
        () =>
          (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document
            .documentElement.scrollWidth,
      );
      expect(width, `${name} scrolls sideways`).toBeLessThanOrEqual(375);
    } finally {
      await page.setViewportSize({ width: 1100, height: 900 });
    }
  }

  it("takes a browser from / to the console, and a newcomer through a first call", async () => {
    const { h, handler } = ready();
    const { close, page, logs } = await newTab(h);
    try {
      // A browser asking for / lands on the console.
      await page.goto(`${h.baseUrl}/`);
      expect(new URL(page.url()).pathname).toBe("/console/");
      await page.getByLabel("Token").waitFor();
      await check(page, "01-sign-in");

      // The operator: a project, then a key for it (secret shown once).
      await signIn(page, h.baseUrl, TEST_OPERATOR_TOKEN);
      await page.getByRole("heading", { level: 1, name: "Projects" }).waitFor();
      const projectId = `c-${randomBytes(4).toString("hex")}`;
      await page.getByLabel("Project ID").fill(projectId);
      await page.getByLabel("Display name").fill("Console test");
      await page.getByRole("button", { name: "Create project" }).click();
      await page.getByRole("cell", { name: projectId, exact: true }).waitFor();
      await check(page, "02-projects");

      await openPage(page, "#/api-keys", "API keys");
      await page.getByLabel("Project ID").fill(projectId);
      await page.getByLabel("Role").selectOption("roles/owner");
      await page.getByRole("button", { name: "Create key" }).click();
      const dialog = page.getByRole("dialog", { name: "The key's secret" });
      await dialog.waitFor();
      await check(page, "03-api-key-secret");
      const secret = await dialog.getByLabel("Secret (shown once)").inputValue();
      expect(secret.length).toBeGreaterThan(20);
      const download = page.waitForEvent("download");
      await dialog.getByRole("button", { name: "Download" }).click();
      expect((await download).suggestedFilename()).toBe(`switchboard-key-${projectId}.txt`);
      await dialog.getByRole("button", { name: "I have saved it" }).click();
      await page.locator("dialog.secret").waitFor({ state: "detached" });
      // Shown once: nowhere on the page any more.
      expect(await page.content()).not.toContain(secret);
      await page.getByRole("button", { name: "Sign out" }).click();

      // The key: no admin pages; find and provision a number.
      await signIn(page, h.baseUrl, secret, projectId);
      await page.getByRole("heading", { level: 1, name: "Numbers" }).waitFor();
      expect(await page.getByRole("link", { name: "Projects" }).count()).toBe(0);
      await page.getByText("The project has no numbers yet").waitFor();
      await page.getByLabel("Country").fill("AU");
      await page.getByRole("button", { name: "Search" }).click();
      const provision = page.getByRole("button", { name: /^Provision \+61/ }).first();
      await provision.waitFor();
      const number = ((await provision.getAttribute("aria-label")) ?? "").replace("Provision ", "");
      await page.getByLabel(/Call handler URI for numbers provisioned here/).fill(`${handler.base}/voice`);
      await provision.click();
      await page.getByRole("region", { name: "The project's numbers" }).getByText(number).waitFor();
      await check(page, "04-numbers");

      // Edit its labels.
      await page.getByRole("button", { name: `Edit ${number}` }).click();
      await page.getByLabel("Labels (key=value per line)").fill("team=console");
      await page.getByRole("button", { name: "Save" }).click();
      await page.getByRole("cell", { name: "team=console" }).waitFor();

      // A call, recorded, watched to COMPLETED without a reload.
      await openPage(page, "#/calls", "Calls");
      await page.getByText("No calls yet.").waitFor();
      await page.getByLabel("To", { exact: true }).fill(CALLEE);
      await page.getByLabel("From (a number of the project)").fill(number);
      await page.getByLabel("Handler URI (VoiceML)").fill(`${handler.base}/voice`);
      await page.getByLabel("State update URI (optional)").fill(`${handler.base}/state`);
      await page.getByLabel("Record the call from its answer").check();
      await page.getByRole("button", { name: "Place call" }).click();
      const placed = page.getByRole("status").getByRole("link");
      await placed.waitFor();
      await check(page, "05-calls");
      let reloads = 0;
      page.on("load", () => reloads++);
      await placed.click();
      await expect
        .poll(() => page.getByTestId("call-state").textContent(), { timeout: 30_000 })
        .toBe("COMPLETED");
      expect(reloads).toBe(0);
      await page.getByRole("heading", { name: "Timeline" }).waitFor();
      expect(await page.locator(".timeline li").count()).toBeGreaterThanOrEqual(4);

      // Its recording plays (the audio element loads the file through the signed link).
      const audio = page.locator("audio").first();
      await audio.waitFor({ timeout: 20_000 });
      await audio.evaluate((a: AudioLike) => {
        a.muted = true;
        return a.play();
      });
      await expect
        .poll(() => audio.evaluate((a: AudioLike) => ({ ready: a.readyState >= 2, error: a.error?.code })), {
          timeout: 10_000,
        })
        .toEqual({ ready: true, error: undefined });
      // Its waveform, decoded from the same audio.
      await page.getByRole("img", { name: /^Waveform of recording / }).waitFor({ timeout: 10_000 });
      await page.getByRole("cell", { name: "CALL_STATE_UPDATE" }).first().waitFor();
      await check(page, "06-call");
      await checkNarrow(page, "06-call-375");

      // Its state updates failed (the handler answered 503); their retries are
      // given up by hand (the last of 9 rounds is hours away), then one is
      // redelivered from the inspector.
      await database.db
        .update(webhookEvents)
        .set({ state: "FAILED", attemptCount: 9, nextAttemptTime: null, completeTime: new Date() })
        .where(and(eq(webhookEvents.projectId, projectId), eq(webhookEvents.eventType, "CALL_STATE_UPDATE")));
      stateDown = false;
      await openPage(page, "#/webhooks", "Webhooks");
      await page.getByLabel("Event").selectOption("CALL_STATE_UPDATE");
      await page.getByLabel("State").selectOption("FAILED");
      await page.getByRole("cell", { name: "FAILED", exact: true }).first().waitFor();
      await check(page, "07-webhooks");
      await page.getByRole("region", { name: "Webhook deliveries" }).getByRole("link").first().click();
      await page.getByRole("heading", { level: 1, name: /^Webhook / }).waitFor();
      await expect
        .poll(() => page.getByTestId("delivery-state").textContent(), { timeout: 10_000 })
        .toBe("FAILED");
      const before = handler.requests.filter((r) => r.path === "/state").length;
      await page.getByRole("button", { name: "Redeliver" }).click();
      await page.getByText("Redelivery queued").waitFor();
      await expect
        .poll(() => handler.requests.filter((r) => r.path === "/state").length, { timeout: 10_000 })
        .toBeGreaterThan(before);
      // The page follows it to DELIVERED, and no longer offers a redelivery.
      await expect
        .poll(() => page.getByTestId("delivery-state").textContent(), { timeout: 10_000 })
        .toBe("DELIVERED");
      expect(await page.getByRole("button", { name: "Redeliver" }).count()).toBe(0);
      await check(page, "08-webhook-delivery");
      await checkNarrow(page, "08-webhook-delivery-375");

      expect(pageProblems(logs)).toEqual([]);
    } catch (err) {
      await screenshot(page, "newcomer-failure").catch(() => {});
      throw err;
    } finally {
      await close();
    }
  }, 180_000);
});
