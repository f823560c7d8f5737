/**
 * The console's pages in headless Chromium, for what a credential may not
 * do and for empty projects: refused sign-ins show the server's message; a
 * viewer sees lists and empty states but no button the API would refuse; a
 * key without a page's permissions sees the API's refusal; operator pages
 * are not offered to project credentials. Every page is checked with
 * axe-core at 375 px wide in the dark theme, and must not scroll sideways.
 *
 * Without Chromium this test FAILS (it never skips).
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PhoneNumber_PhoneNumberCapability as Capability } from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { systemClock } from "../../src/clock.js";
import { addBlock, blockAllocator, numberingClients, provision } from "../numbering/support.js";
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

describe.each(testDatabases().slice(0, 1))("the console's pages ($name)", (backend) => {
  const database = useTestDatabase(backend);
  let h: ConsoleHarness | undefined;
  let projectId = "";
  let viewer = "";
  let numberingOnly = "";
  let owner = "";
  let sender = "";
  let setupError: unknown;

  beforeAll(async () => {
    try {
      h = await startConsole(database.db);
      const project = await newProject(database.db);
      projectId = project.slice("projects/".length);
      viewer = (await newApiKey(database.db, [{ project, roles: ["roles/viewer"] }])).secret;
      numberingOnly = (await newApiKey(database.db, [{ project, roles: ["roles/numbering.admin"] }])).secret;
      owner = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
      const numbering = numberingClients(database.db, systemClock);
      const blocks = blockAllocator();
      await addBlock(numbering, blocks(), 5);
      // The owner's project has an SMS number (provisioned after the viewer's empty-state checks read nothing).
      sender = await addBlock(numbering, blocks(), 1, { capabilities: [Capability.SMS, Capability.VOICE] });
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

  it("refuses an unknown token with the server's message", async () => {
    const h = ready();
    const { close, page } = await newTab(h, { width: 375, dark: true });
    try {
      await page.goto(`${h.baseUrl}/console/`);
      await page.getByLabel("Token").fill("not-a-real-token");
      await page.getByLabel("Project ID").fill(projectId);
      await page.getByRole("button", { name: "Sign in" }).click();
      const alert = page.getByRole("alert");
      await alert.waitFor();
      expect(await alert.textContent()).toMatch(/Sign-in refused: UNAUTHENTICATED/);
      expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(0);
      await check(page, "sign-in-refused-375-dark", 375);
    } finally {
      await close();
    }
  });

  it("signs in and moves between pages from the keyboard alone", async () => {
    const h = ready();
    const { close, page } = await newTab(h);
    try {
      await page.goto(`${h.baseUrl}/console/`);
      // The app renders after the load event: wait for its sign-in form before the first Tab.
      await page.locator('input[id*="token"]').waitFor();
      await page.keyboard.press("Tab");
      expect(
        await page.evaluate(
          () =>
            (globalThis as unknown as { document: { activeElement: { id: string } } }).document.activeElement
              .id,
        ),
      ).toMatch(/token/);
      await page.keyboard.type(viewer);
      await page.keyboard.press("Tab");
      await page.keyboard.type(projectId);
      await page.keyboard.press("Enter");
      await page.getByRole("heading", { level: 1, name: "Numbers" }).waitFor();
      // The skip link comes first, then the navigation.
      await page.keyboard.press("Tab");
      expect(
        await page.evaluate(
          () =>
            (globalThis as unknown as { document: { activeElement: { textContent: string } } }).document
              .activeElement.textContent,
        ),
      ).toBe("Skip to content");
      const calls = page.getByRole("link", { name: "Calls" });
      for (
        let i = 0;
        i < 10 &&
        !(await calls.evaluate(
          (el) =>
            el === (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement,
        ));
        i++
      ) {
        await page.keyboard.press("Tab");
      }
      await page.keyboard.press("Enter");
      await page.getByRole("heading", { level: 1, name: "Calls" }).waitFor();
    } finally {
      await close();
    }
  });

  it("asks a project credential for its project", async () => {
    const h = ready();
    const { close, page } = await newTab(h);
    try {
      await page.goto(`${h.baseUrl}/console/`);
      await page.getByLabel("Token").fill(viewer);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page
        .getByRole("alert")
        .getByText(/enter the project it works on/)
        .waitFor();
    } finally {
      await close();
    }
  });

  it("shows a viewer the lists and empty states, and no button the API would refuse", async () => {
    const h = ready();
    const { close, page, logs } = await newTab(h, { width: 375, dark: true });
    try {
      await signIn(page, h.baseUrl, viewer, projectId);
      // No operator pages offered, and none reachable.
      expect(await page.getByRole("link", { name: "Projects" }).count()).toBe(0);
      expect(await page.getByRole("link", { name: "API keys" }).count()).toBe(0);
      await page.evaluate(() => {
        (globalThis as unknown as { location: { hash: string } }).location.hash = "#/projects";
      });
      await page.getByText("This page is the operator's").waitFor();
      await check(page, "viewer-projects-375-dark", 375);

      await openPage(page, "#/numbers", "Numbers");
      await page.getByText("The project has no numbers yet").waitFor();
      await page.getByRole("button", { name: "Search" }).click();
      await page.getByRole("region", { name: "Numbers available" }).waitFor();
      expect(await page.getByRole("cell", { name: /\+61/ }).count()).toBeGreaterThan(0);
      expect(await page.getByRole("button", { name: /^Provision/ }).count()).toBe(0);
      await check(page, "viewer-numbers-375-dark", 375);

      await openPage(page, "#/calls", "Calls");
      await page.getByText("No calls yet.").waitFor();
      expect(await page.getByRole("form", { name: "Place a call" }).count()).toBe(0);
      await page.getByLabel("State").selectOption("FAILED");
      await page.getByText("No call matches these filters.").waitFor();
      await check(page, "viewer-calls-375-dark", 375);

      await openPage(page, "#/webhooks", "Webhooks");
      await page.getByText("No webhooks sent yet.").waitFor();
      await check(page, "viewer-webhooks-375-dark", 375);

      await openPage(page, "#/messages", "Messages");
      await page.getByText("No messages yet.").waitFor();
      await page.getByText("Nobody has unsubscribed.").waitFor();
      expect(await page.getByRole("form", { name: "Send a message" }).count()).toBe(0);
      expect(await page.getByRole("form", { name: "Add an unsubscriber" }).count()).toBe(0);
      await check(page, "viewer-messages-375-dark", 375);

      expect(pageProblems(logs)).toEqual([]);
    } finally {
      await close();
    }
  });

  it("shows the API's refusal where a key lacks a page's permissions", async () => {
    const h = ready();
    const { close, page } = await newTab(h);
    try {
      await signIn(page, h.baseUrl, numberingOnly, projectId);
      await openPage(page, "#/calls", "Calls");
      const alert = page.getByRole("alert");
      await alert.waitFor();
      const text = await alert.textContent();
      expect(text).toMatch(/Could not list calls: PERMISSION_DENIED/);
      expect(text).toMatch(/voice\.calls\.list/);
      expect(text).toMatch(/Request id: \S+/);
      // It may not place calls either: the form is not offered.
      expect(await page.getByRole("form", { name: "Place a call" }).count()).toBe(0);
      await check(page, "numbering-only-calls", 1100);
    } finally {
      await close();
    }
  });

  it("shows the operator the admin pages, usable at 375 px in the dark theme", async () => {
    const h = ready();
    const { close, page } = await newTab(h, { width: 375, dark: true });
    try {
      await signIn(page, h.baseUrl, TEST_OPERATOR_TOKEN);
      await page.getByRole("heading", { level: 1, name: "Projects" }).waitFor();
      // At 375 px a row is a card: each cell's name starts with its column's label.
      await page.getByText(projectId, { exact: true }).waitFor();
      await check(page, "operator-projects-375-dark", 375);
      await openPage(page, "#/api-keys", "API keys");
      await page.getByRole("table").waitFor();
      await check(page, "operator-api-keys-375-dark", 375);
      // Service accounts: a key file shown once.
      await openPage(page, "#/service-accounts", "Service accounts");
      await page.getByText("No service accounts yet.").waitFor();
      await check(page, "operator-service-accounts-empty-375-dark", 375);
      await page.getByLabel("Account ID").fill("console-bot");
      await page.getByLabel("Project ID").fill(projectId);
      await page.getByRole("button", { name: "Create service account" }).click();
      await page.getByRole("button", { name: "Create a key for console-bot" }).click();
      const dialog = page.getByRole("dialog", { name: "The key file" });
      await dialog.waitFor();
      expect(JSON.parse(await dialog.getByLabel("Secret (shown once)").inputValue())).toHaveProperty(
        "private_key",
      );
      await check(page, "operator-service-account-key-375-dark", 375);
      await dialog.getByRole("button", { name: "I have saved it" }).click();

      // Inventory: a block added, then found.
      await openPage(page, "#/inventory", "Inventory");
      await page.getByLabel("First number (E.164)").fill("+6125550");
      await page.getByLabel("First number (E.164)").fill("+61755509900");
      await page.getByLabel("How many").fill("3");
      await page.getByRole("button", { name: "Add block" }).click();
      await page.getByText("Added the block.").waitFor();
      await page.getByLabel("Starts with").fill("+617555099");
      await page.getByRole("button", { name: "Search" }).click();
      await page.getByText("+61755509902").waitFor();
      await check(page, "operator-inventory-375-dark", 375);

      // Simulator: a route, and an incoming message to a number nobody holds (the API's refusal shown).
      await openPage(page, "#/simulator", "Simulator");
      await page.getByText(/No routes/).waitFor();
      await page.getByLabel("Numbers starting with").fill("+6149157");
      await page.getByLabel("Keys pressed after answering").fill("12x");
      expect(await page.getByLabel("Keys pressed after answering").getAttribute("aria-invalid")).toBe("true");
      await page.getByLabel("Keys pressed after answering").fill("12#");
      await page.getByRole("button", { name: "Add route" }).click();
      await page.getByRole("button", { name: "Delete route +6149157" }).waitFor();
      const inject = page.getByRole("form", { name: "Inject an incoming message" });
      await inject.getByLabel("To (a provisioned number)").fill("+61755509901");
      await inject.getByLabel("From").fill("+61491570156");
      await inject.getByLabel("Body").fill("hello");
      await inject.getByRole("button", { name: "Deliver the message" }).click();
      await inject.getByRole("alert").waitFor();
      await check(page, "operator-simulator-375-dark", 375);

      // A project opened: its pages are offered too.
      await openPage(page, "#/projects", "Projects");
      await page.getByRole("button", { name: `Open ${projectId}` }).click();
      await page.getByRole("heading", { level: 1, name: "Numbers" }).waitFor();
      expect(await page.getByRole("link", { name: "Calls" }).count()).toBe(1);
    } finally {
      await close();
    }
  });

  it("shows a message's encoding and segments before sending it, then its status", async () => {
    const h = ready();
    const { close, page, logs } = await newTab(h);
    try {
      await provision(numberingClients(database.db, systemClock), `projects/${projectId}`, sender);
      await signIn(page, h.baseUrl, owner, projectId);
      await openPage(page, "#/messages", "Messages");
      const body = page.getByLabel("Body");
      const facts = page.getByTestId("message-encoding");
      await body.fill("Hello from the console");
      expect(await facts.textContent()).toBe("GSM7 · 1 segment");
      await body.fill("x".repeat(161));
      expect(await facts.textContent()).toBe("GSM7 · 2 segments");
      await body.fill("Héllo “friend” 😀");
      expect(await facts.textContent()).toBe("UCS2 · 1 segment");
      await body.fill("Hello “friend”");
      await page.getByLabel(/Smart encoding/).check();
      expect(await facts.textContent()).toBe("GSM7 · 1 segment");
      await page.getByLabel("To", { exact: true }).fill("+61491570156");
      await page.getByLabel("From (a number of the project)").fill(sender);
      await page.getByRole("button", { name: "Send", exact: true }).click();
      const sent = page.getByRole("status").getByRole("link");
      await sent.waitFor();
      await sent.click();
      await page.getByRole("heading", { level: 1, name: /^Message / }).waitFor();
      await expect
        .poll(() => page.getByTestId("message-status").textContent(), { timeout: 30_000 })
        .toMatch(/DELIVERED|SENT|UNDELIVERED/);
      await page.getByRole("heading", { name: "Status history" }).waitFor();
      await check(page, "owner-message", 1100);

      // Unsubscribers: checked as typed, added, listed.
      await openPage(page, "#/messages", "Messages");
      await page.getByLabel("Add a number").fill("0491");
      expect(await page.getByLabel("Add a number").getAttribute("aria-invalid")).toBe("true");
      await page.getByLabel("Add a number").fill("+61491570199");
      await page.getByRole("button", { name: "Add", exact: true }).click();
      await page.getByRole("button", { name: "Remove +61491570199" }).waitFor();
      await check(page, "owner-messages", 1100);
      expect(pageProblems(logs)).toEqual([]);
    } finally {
      await close();
    }
  });

  it("checks a SIP domain's CIDR blocks as they are typed, then creates and edits it", async () => {
    const h = ready();
    const { close, page, logs } = await newTab(h, { width: 375 });
    try {
      await signIn(page, h.baseUrl, owner, projectId);
      await openPage(page, "#/sip-domains", "SIP domains");
      await page.getByText("No SIP domains yet.").waitFor();
      const form = page.getByRole("form", { name: "Create a SIP domain" });
      const domainId = `c${projectId.slice(2, 12)}`;
      await form.getByLabel("Domain ID").fill(domainId);
      await form.getByLabel("Handler URIs (one per line)").fill("https://handler.example.com/sip");
      const cidrs = form.getByLabel("CIDR blocks (one per line)");
      await cidrs.fill("203.0.113.7/24");
      await form.getByRole("alert").getByText("host bits are set: the block is 203.0.113.0/24").waitFor();
      expect(await cidrs.getAttribute("aria-invalid")).toBe("true");
      expect(await form.getByRole("button", { name: "Create domain" }).isDisabled()).toBe(true);
      await cidrs.fill("203.0.113.0/24\n10.0.0.300/32");
      await form
        .getByRole("alert")
        .getByText(/10\.0\.0\.300\/32: each part of the address is 0 to 255/)
        .waitFor();
      await cidrs.fill("203.0.113.0/24\n198.51.100.7/32");
      await form.getByText("2 blocks").waitFor();
      await check(page, "owner-sip-domain-form-375", 375);
      await form.getByRole("button", { name: "Create domain" }).click();
      await page.getByRole("button", { name: `Edit ${domainId}` }).waitFor();
      await page.getByText("198.51.100.7/32", { exact: false }).first().waitFor();

      await page.getByRole("button", { name: `Edit ${domainId}` }).click();
      const edit = page.getByRole("form", { name: `Edit ${domainId}` });
      await edit.getByLabel("Display name").fill("Office");
      await edit.getByLabel("CIDR blocks (one per line)").fill("192.0.2.0/28");
      await edit.getByRole("button", { name: "Save" }).click();
      await edit.waitFor({ state: "detached" });
      await page.getByText("192.0.2.0/28").first().waitFor();
      await check(page, "owner-sip-domains-375", 375);
      expect(pageProblems(logs)).toEqual([]);
    } catch (err) {
      await screenshot(page, "sip-failure").catch(() => {});
      throw err;
    } finally {
      await close();
    }
  });
});
