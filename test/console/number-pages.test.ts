/**
 * The console's number ranges and moves in headless Chromium against the
 * real app: the operator provisions a range to a project (checked as
 * typed), splits it, edits it, suspends and resumes it, and registers
 * and completes a port-in; a key holding two
 * projects moves a range from one to the other and sees the API's refusal
 * for a project it does not hold, and releases a range; a viewer sees the
 * ranges and their empty state but no button the API would refuse.
 * Regulatory listings: created by a key and attached to a number it
 * provisions (compliant), reviewed by the operator, refused deletion while
 * in use, read by a viewer.
 * axe-core, 375 px and screenshots on each.
 *
 * Without Chromium this test FAILS (it never skips).
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import { addBlock, blockAllocator, numberingClients, plus } from "../numbering/support.js";
import { newApiKey, newProject, TEST_OPERATOR_TOKEN } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
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

/** A number outside the inventory, ported in from another carrier. */
const PORTED = "+61255509900";

describe.each(testDatabases().slice(0, 1))("the console's number ranges ($name)", (backend) => {
  const database = useTestDatabase(backend);
  let h: ConsoleHarness | undefined;
  let projectId = "";
  let otherId = "";
  let strangerId = "";
  let emptyId = "";
  let owner = "";
  let viewer = "";
  let emptyViewer = "";
  let block = "";
  let setupError: unknown;

  beforeAll(async () => {
    try {
      h = await startConsole(database.db);
      const project = await newProject(database.db);
      const other = await newProject(database.db);
      const stranger = await newProject(database.db);
      const empty = await newProject(database.db);
      projectId = project.slice("projects/".length);
      otherId = other.slice("projects/".length);
      strangerId = stranger.slice("projects/".length);
      emptyId = empty.slice("projects/".length);
      owner = (
        await newApiKey(database.db, [
          { project, roles: ["roles/owner"] },
          { project: other, roles: ["roles/numbering.admin"] },
        ])
      ).secret;
      viewer = (await newApiKey(database.db, [{ project, roles: ["roles/viewer"] }])).secret;
      emptyViewer = (await newApiKey(database.db, [{ project: empty, roles: ["roles/viewer"] }])).secret;
      block = await addBlock(numberingClients(database.db, systemClock), blockAllocator()(), 20);
    } catch (err) {
      setupError = err;
    }
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  function ready(): ConsoleHarness {
    if (setupError !== undefined) throw setupError;
    if (h === undefined) throw new Error("setup did not run");
    return h;
  }

  /** Screenshot, axe, and no sideways scrolling at the tab's width. */
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

  it("lets the operator provision, split, edit, suspend and resume a range; a key move one and release one", async () => {
    const h = ready();
    const operator = await newTab(h, { width: 375 });
    try {
      const { page } = operator;
      await signIn(page, h.baseUrl, TEST_OPERATOR_TOKEN);
      await page.getByRole("button", { name: `Open ${projectId}` }).click();
      await openPage(page, "#/ranges", "Number ranges");
      await page.getByText("The project holds no ranges: provision one above.").waitFor();
      const form = page.getByRole("form", { name: "Provision a range" });
      await form.getByLabel("First number (E.164)").fill("0255501");
      expect(await form.getByLabel("First number (E.164)").getAttribute("aria-invalid")).toBe("true");
      expect(await form.getByRole("button", { name: "Provision range" }).isDisabled()).toBe(true);
      await form.getByLabel("First number (E.164)").fill(block);
      await form.getByLabel("How many numbers").fill("10");
      await form.getByRole("button", { name: "Provision range" }).click();
      await form.getByText(`Provisioned ${block} – ${plus(block, 9)} (10 numbers).`).waitFor();
      // The same numbers again: the API's refusal.
      await form.getByRole("button", { name: "Provision range" }).click();
      await form
        .getByRole("alert")
        .getByText(/Could not provision the range: ALREADY_EXISTS/)
        .waitFor();

      await page.getByRole("button", { name: `Split ${block}` }).click();
      const split = page.getByRole("form", { name: `Split ${block}` });
      await split.getByLabel("Numbers kept in this range").fill("10");
      expect(await split.getByLabel("Numbers kept in this range").getAttribute("aria-invalid")).toBe("true");
      await split.getByLabel("Numbers kept in this range").fill("4");
      await split.getByText("The other 6 form a new range with the same configuration.").waitFor();
      await split.getByRole("button", { name: "Split" }).click();
      await page.getByText(`${block} – ${plus(block, 3)} (4 numbers)`).waitFor();
      await page.getByText(`${plus(block, 4)} – ${plus(block, 9)} (6 numbers)`).waitFor();

      await page.getByRole("button", { name: `Edit ${block}` }).click();
      const edit = page.getByRole("form", { name: `Edit ${block}` });
      await edit.getByLabel("Display name").fill("Sales lines");
      await edit.getByRole("button", { name: "Save" }).click();
      await edit.waitFor({ state: "detached" });
      await page.getByRole("cell", { name: /Sales lines/ }).waitFor();

      // The operator's lifecycle: suspend, then resume.
      await page.getByRole("button", { name: `Suspend ${block}` }).click();
      await page.getByRole("button", { name: `Resume ${block}` }).waitFor();
      await page.getByRole("cell", { name: /SUSPENDED/ }).waitFor();
      await page.getByRole("button", { name: `Resume ${block}` }).click();
      await page.getByRole("button", { name: `Suspend ${block}` }).waitFor();
      await check(page, "operator-ranges-375", 375);

      // A port-in, registered then completed.
      await openPage(page, "#/numbers", "Numbers");
      const portIn = page.getByRole("form", { name: "Register a port-in" });
      const field = portIn.getByLabel("Number ported from another carrier (E.164)");
      await field.fill("0255509900");
      expect(await field.getAttribute("aria-invalid")).toBe("true");
      await field.fill(PORTED);
      await portIn.getByRole("button", { name: "Register port-in" }).click();
      await portIn.getByText(`${PORTED} is PENDING until its port-in is completed.`).waitFor();
      await page.getByRole("button", { name: `Complete port-in ${PORTED}` }).click();
      await page.getByRole("button", { name: `Suspend ${PORTED}` }).waitFor();
      // The same number again: the API's refusal.
      await portIn.getByRole("button", { name: "Register port-in" }).click();
      await portIn
        .getByRole("alert")
        .getByText(/Could not register the port-in: ALREADY_EXISTS/)
        .waitFor();
      await check(page, "operator-numbers-port-in-375", 375);
      expect(pageProblems(operator.logs)).toEqual([]);
    } catch (err) {
      await screenshot(operator.page, "ranges-failure").catch(() => {});
      throw err;
    } finally {
      await operator.close();
    }

    const keyTab = await newTab(h);
    try {
      const { page } = keyTab;
      await signIn(page, h.baseUrl, owner, projectId);
      await openPage(page, "#/ranges", "Number ranges");
      // Not the operator: no provisioning.
      expect(await page.getByRole("form", { name: "Provision a range" }).count()).toBe(0);
      const second = plus(block, 4);
      await page.getByRole("button", { name: `Move ${second}` }).click();
      const move = page.getByRole("form", { name: `Move ${second}` });
      // A project the key does not hold: the API's refusal.
      await move.getByLabel("Destination project ID").fill(strangerId);
      await move.getByRole("button", { name: "Move" }).click();
      await move
        .getByRole("alert")
        .getByText(/Could not move it: PERMISSION_DENIED/)
        .waitFor();
      await move.getByLabel("Destination project ID").fill("Not a project");
      expect(await move.getByLabel("Destination project ID").getAttribute("aria-invalid")).toBe("true");
      await move.getByLabel("Destination project ID").fill(otherId);
      await move.getByRole("button", { name: "Move" }).click();
      await move.waitFor({ state: "detached" });
      await expect.poll(() => page.getByText(`${second} – `).count(), { timeout: 10_000 }).toBe(0);
      await check(page, "owner-ranges-moved", 1100);

      // It is the other project's now.
      await page.getByRole("button", { name: "Sign out" }).click();
      await signIn(page, h.baseUrl, owner, otherId);
      await openPage(page, "#/ranges", "Number ranges");
      await page.getByText(`${second} – ${plus(block, 9)} (6 numbers)`).waitFor();
      await page.getByRole("button", { name: `Release ${second}` }).click();
      await page.getByRole("button", { name: `Confirm release of ${second}` }).click();
      await page.getByText("The project holds no ranges: the operator provisions them.").waitFor();
      await page.getByLabel("Include released numbers").check();
      await page.getByRole("cell", { name: /DELETED/ }).waitFor();
      expect(pageProblems(keyTab.logs)).toEqual([]);
    } catch (err) {
      await screenshot(keyTab.page, "ranges-move-failure").catch(() => {});
      throw err;
    } finally {
      await keyTab.close();
    }
  });

  it("shows a viewer the ranges, their empty state and no button the API would refuse", async () => {
    const h = ready();
    const { close, page, logs } = await newTab(h, { width: 375, dark: true });
    try {
      await signIn(page, h.baseUrl, emptyViewer, emptyId);
      await openPage(page, "#/ranges", "Number ranges");
      await page.getByText("The project holds no ranges: the operator provisions them.").waitFor();
      await check(page, "viewer-ranges-empty-375-dark", 375);
      await page.getByRole("button", { name: "Sign out" }).click();

      await signIn(page, h.baseUrl, viewer, projectId);
      await openPage(page, "#/ranges", "Number ranges");
      await page.getByText(`${block} – ${plus(block, 3)} (4 numbers)`).waitFor();
      expect(await page.getByRole("form", { name: "Provision a range" }).count()).toBe(0);
      for (const action of ["Edit", "Split", "Move", "Release", "Suspend"]) {
        expect(await page.getByRole("button", { name: new RegExp(`^${action} `) }).count(), action).toBe(0);
      }
      await check(page, "viewer-ranges-375-dark", 375);
      expect(pageProblems(logs)).toEqual([]);
    } finally {
      await close();
    }
  });

  it("lets a key create a regulatory listing and attach it, the operator review it, a viewer only read", async () => {
    const h = ready();
    const keyTab = await newTab(h, { width: 375 });
    let listing = "";
    try {
      const { page } = keyTab;
      await signIn(page, h.baseUrl, owner, projectId);
      await openPage(page, "#/listings", "Regulatory listings");
      await page.getByText("No listings yet: create one above.").waitFor();
      const form = page.getByRole("form", { name: "Create a listing" });
      await form.getByLabel("Display name").fill("Head office");
      await form.getByLabel("Business name").fill("Acme Pty Ltd");
      await form.getByLabel("Address line 1").fill("1 Example Street");
      await form.getByLabel("Locality").fill("Sydney");
      await form.getByLabel("State or region").fill("NSW");
      await form.getByLabel("Postal code").fill("2000");
      await form.getByLabel("Country").fill("au");
      expect(await form.getByLabel("Country").getAttribute("aria-invalid")).toBe("true");
      expect(await form.getByRole("button", { name: "Create listing" }).isDisabled()).toBe(true);
      await form.getByLabel("Country").fill("AU");
      await form.getByRole("button", { name: "Create listing" }).click();
      const created = form.getByRole("status").locator("code");
      await created.waitFor();
      listing = (await created.textContent()) ?? "";
      await page.getByRole("cell", { name: /Acme Pty Ltd/ }).waitFor();
      // Only the operator reviews.
      expect(await page.getByRole("button", { name: `Mark valid ${listing}` }).count()).toBe(0);
      await check(page, "owner-listings-375", 375);

      // A number provisioned with the listing attached: compliant (a valid AU listing, a local number).
      const attached = plus(block, 10);
      await openPage(page, "#/numbers", "Numbers");
      await page.getByLabel("Starts with", { exact: true }).fill(attached);
      await page.getByRole("button", { name: "Search" }).click();
      await page.getByLabel("Regulatory listing to attach (optional)").selectOption({ label: "Head office" });
      await page.getByRole("button", { name: `Provision ${attached}` }).click();
      await page.getByRole("cell", { name: `Yes (listing ${listing})` }).waitFor();
      expect(pageProblems(keyTab.logs)).toEqual([]);
    } finally {
      await keyTab.close();
    }

    const operator = await newTab(h);
    try {
      const { page } = operator;
      await signIn(page, h.baseUrl, TEST_OPERATOR_TOKEN);
      await page.getByRole("button", { name: `Open ${projectId}` }).click();
      await openPage(page, "#/listings", "Regulatory listings");
      // The service found it valid as created; the operator verifies it, and can take validity back.
      await page.getByRole("button", { name: `Mark verified ${listing}` }).click();
      await page.getByRole("button", { name: `Mark unverified ${listing}` }).waitFor();
      await page.getByRole("button", { name: `Mark invalid ${listing}` }).click();
      await page.getByRole("button", { name: `Mark valid ${listing}` }).waitFor();
      await check(page, "operator-listings", 1100);
      // In use by a number: the API refuses to delete it, and says why.
      await page.getByRole("button", { name: `Delete ${listing}` }).click();
      await page.getByRole("button", { name: `Confirm deleting ${listing}` }).click();
      await page
        .getByRole("alert")
        .getByText(new RegExp(`Could not delete ${listing}: FAILED_PRECONDITION`))
        .waitFor();
      expect(pageProblems(operator.logs)).toEqual([]);
    } finally {
      await operator.close();
    }

    const v = await newTab(h, { width: 375, dark: true });
    try {
      await signIn(v.page, h.baseUrl, emptyViewer, emptyId);
      await openPage(v.page, "#/listings", "Regulatory listings");
      await v.page.getByText("No listings yet.").waitFor();
      expect(await v.page.getByRole("form", { name: "Create a listing" }).count()).toBe(0);
      await check(v.page, "viewer-listings-empty-375-dark", 375);
      await v.page.getByRole("button", { name: "Sign out" }).click();
      await signIn(v.page, h.baseUrl, viewer, projectId);
      await openPage(v.page, "#/listings", "Regulatory listings");
      await v.page.getByRole("cell", { name: /Acme Pty Ltd/ }).waitFor();
      expect(await v.page.getByRole("form", { name: "Create a listing" }).count()).toBe(0);
      expect(await v.page.getByRole("button", { name: `Delete ${listing}` }).count()).toBe(0);
      await check(v.page, "viewer-listings-375-dark", 375);
      expect(pageProblems(v.logs)).toEqual([]);
    } finally {
      await v.close();
    }
  });
});
