/**
 * The console's SIP pages in headless Chromium against the real app: a SIP
 * domain's page with its users (added with a write-only password,
 * disabled, edited, deleted) and aliases (endpoints checked as typed),
 * the operator's domain-optional switch,
 * collaboration verification (the owner applies
 * a string, the operator accepts it), and a SIP call's dialogue drawn as a
 * ladder (rung from the simulator page by the operator) with its capture
 * downloaded. For each, what a viewer and a key
 * without the area's permissions see (no button the API would refuse; the
 * API's refusal), the empty states, axe-core, 375 px and screenshots.
 *
 * Without Chromium this test FAILS (it never skips).
 */
import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { systemClock } from "../../src/clock.js";
import { createTestClient, newApiKey, newProject, TEST_OPERATOR_TOKEN } from "../support/app.js";
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

describe.each(testDatabases().slice(0, 1))("the console's SIP pages ($name)", (backend) => {
  const database = useTestDatabase(backend);
  let h: ConsoleHarness | undefined;
  let handler: Receiver | undefined;
  let projectId = "";
  let viewer = "";
  let messagingOnly = "";
  let owner = "";
  let setupError: unknown;

  beforeAll(async () => {
    try {
      h = await startConsole(database.db, {
        SIMULATOR_TIME_SCALE: "0.05",
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
      });
      handler = await startReceiver();
      handler.handle((_req, res) => {
        res.setHeader("content-type", "application/xml");
        res.end(xml('<Say>Hello over SIP.</Say><Wait Seconds="1"/>'));
      });
      const project = await newProject(database.db);
      projectId = project.slice("projects/".length);
      viewer = (await newApiKey(database.db, [{ project, roles: ["roles/viewer"] }])).secret;
      messagingOnly = (await newApiKey(database.db, [{ project, roles: ["roles/messaging.admin"] }])).secret;
      owner = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
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

  /** A domain made through the API (not the path under test); returns its id and FQDN. */
  async function newDomain(init: {
    cidr?: string;
    handler?: string;
    collab?: boolean;
  }): Promise<{ id: string; fqdn: string }> {
    const id = `d${Math.random().toString(36).slice(2, 12)}`;
    const domain = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
      parent: `projects/${projectId}`,
      sipDomainId: id,
      sipDomain: {
        allowRegister: true,
        type: init.collab === true ? 2 : 1,
        callTerminationMode: init.handler === undefined ? Mode.TERMINATION_MODE_DISABLED : Mode.PROGRAMMABLE,
        callTerminationHandlerUris: init.handler === undefined ? [] : [init.handler],
        cidrBlocks: init.cidr === undefined ? [] : [{ cidrBlock: init.cidr }],
      },
    });
    return { id, fqdn: domain.fqdn };
  }

  it("adds, disables, edits and deletes a domain's users, the password write-only", async () => {
    const h = ready();
    const { id, fqdn } = await newDomain({ cidr: "198.51.100.0/24" });
    const { close, page, logs } = await newTab(h, { width: 375 });
    try {
      await signIn(page, h.baseUrl, owner, projectId);
      await openPage(page, "#/sip-domains", "SIP domains");
      await page.getByRole("link", { name: fqdn }).click();
      await page.getByRole("heading", { level: 1, name: `SIP domain ${id}` }).waitFor();
      await page.getByText("The domain has no users yet").waitFor();
      await check(page, "owner-sip-domain-empty-375", 375);

      const form = page.getByRole("form", { name: "Add a user" });
      await form.getByLabel("User ID").fill("Desk 1");
      expect(await form.getByLabel("User ID").getAttribute("aria-invalid")).toBe("true");
      await form.getByLabel("User ID").fill("desk-1");
      await form.getByLabel("Username").fill("desk1");
      await form.getByText(`sip:desk1@${fqdn}`).waitFor();
      const password = form.getByLabel("Password");
      expect(await password.getAttribute("type")).toBe("password");
      await password.fill("short");
      expect(await password.getAttribute("aria-invalid")).toBe("true");
      expect(await form.getByRole("button", { name: "Add user" }).isDisabled()).toBe(true);
      await password.fill("correct horse battery");
      await form.getByRole("button", { name: "Add user" }).click();
      await form.getByText(/Added desk-1; its password is not shown again/).waitFor();
      // The password left the page: the field is empty and nothing shows it.
      expect(await password.inputValue()).toBe("");
      expect(await page.content()).not.toContain("correct horse battery");
      await page.getByRole("cell", { name: /Enabled/ }).waitFor();

      await page.getByRole("button", { name: "Disable desk-1" }).click();
      await page.getByRole("button", { name: "Enable desk-1" }).waitFor();
      await page.getByRole("cell", { name: /Disabled/ }).waitFor();

      await page.getByRole("button", { name: "Edit desk-1" }).click();
      const edit = page.getByRole("form", { name: "Edit desk-1" });
      await edit.getByLabel("Display name").fill("Front desk");
      await edit.getByLabel("New password").fill("another long password");
      await edit.getByRole("button", { name: "Save" }).click();
      await edit.waitFor({ state: "detached" });
      await page.getByRole("cell", { name: /Front desk/ }).waitFor();
      await check(page, "owner-sip-domain-users-375", 375);

      // A duplicate: the API's refusal shown.
      await form.getByLabel("User ID").fill("desk-1");
      await form.getByLabel("Username").fill("desk1");
      await password.fill("correct horse battery");
      await form.getByRole("button", { name: "Add user" }).click();
      await form
        .getByRole("alert")
        .getByText(/Could not add the user: ALREADY_EXISTS/)
        .waitFor();

      await page.getByRole("button", { name: "Delete desk-1" }).click();
      await page.getByRole("button", { name: "Confirm deleting desk-1" }).click();
      await page.getByText("The domain has no users yet").waitFor();

      // An alias: its endpoints checked as typed, added, deleted.
      await page.getByText("The domain has no aliases.").waitFor();
      const alias = page.getByRole("form", { name: "Add an alias" });
      await alias.getByLabel("Alias ID").fill("pbx");
      const endpoints = alias.getByLabel("Endpoints (one per line)");
      await endpoints.fill("pbx.example.com weight=0");
      await alias
        .getByRole("alert")
        .getByText(/not a sip: or sips: URI, weight is 1 to 65535/)
        .waitFor();
      expect(await alias.getByRole("button", { name: "Add alias" }).isDisabled()).toBe(true);
      await endpoints.fill("sip:pbx.example.com:5060 priority=1 weight=20\nsip:backup.example.com disabled");
      await alias.getByText(/^2 endpoints/).waitFor();
      await alias
        .getByLabel("Failover call handler URIs (one per line)")
        .fill("https://handler.example.com/failover");
      await alias.getByRole("button", { name: "Add alias" }).click();
      await page.getByText("sip:backup.example.com priority=0 weight=10 disabled").waitFor();
      await check(page, "owner-sip-domain-aliases-375", 375);
      await page.getByRole("button", { name: "Delete alias pbx" }).click();
      await page.getByRole("button", { name: "Confirm: delete alias pbx" }).click();
      await page.getByText("The domain has no aliases.").waitFor();

      // A user again, then the domain deleted: its users are read, not changed.
      await form.getByLabel("User ID").fill("desk-2");
      await form.getByLabel("Username").fill("desk2");
      await password.fill("correct horse battery");
      await form.getByRole("button", { name: "Add user" }).click();
      await page.getByRole("button", { name: "Disable desk-2" }).waitFor();
      await openPage(page, "#/sip-domains", "SIP domains");
      await page.getByRole("button", { name: `Delete ${id}` }).click();
      await page.getByRole("button", { name: `Confirm deleting ${id}` }).click();
      await expect.poll(() => page.getByRole("link", { name: fqdn }).count(), { timeout: 10_000 }).toBe(0);
      await page.getByLabel("Include deleted domains").check();
      await page.getByRole("link", { name: fqdn }).click();
      await page.getByText("The domain is deleted: its users can be read, not changed.").waitFor();
      await page
        .getByRole("cell", { name: /desk-2/ })
        .first()
        .waitFor();
      expect(await page.getByRole("form", { name: "Add a user" }).count()).toBe(0);
      expect(await page.getByRole("button", { name: /desk-2$/ }).count()).toBe(0);
      expect(pageProblems(logs)).toEqual([]);
    } catch (err) {
      await screenshot(page, "sip-users-failure").catch(() => {});
      throw err;
    } finally {
      await close();
    }
  });

  it("shows a viewer the users and verification but no button, and a key without voice the refusal", async () => {
    const h = ready();
    const { id } = await newDomain({ collab: true });
    const { close, page, logs } = await newTab(h, { width: 375, dark: true });
    try {
      await signIn(page, h.baseUrl, viewer, projectId);
      await openPage(page, `#/sip-domains/${id}`, `SIP domain ${id}`);
      await page.getByText("The domain has no users.").waitFor();
      await page.getByRole("heading", { name: "Collaboration verification" }).waitFor();
      expect(await page.getByTestId("collab-verified").textContent()).toBe("Not verified");
      expect(await page.getByRole("form", { name: "Add a user" }).count()).toBe(0);
      expect(await page.getByRole("form", { name: "Apply a verification string" }).count()).toBe(0);
      expect(await page.getByText("The platform's side").count()).toBe(0);
      expect(await page.getByRole("form", { name: "Domain-optional mode" }).count()).toBe(0);
      // The collaboration domain's alias is the service's; a viewer may not add any.
      await page.getByRole("cell", { name: /collab-proxies/ }).waitFor();
      expect(await page.getByRole("form", { name: "Add an alias" }).count()).toBe(0);
      expect(await page.getByRole("button", { name: /^Delete alias/ }).count()).toBe(0);
      await check(page, "viewer-sip-domain-375-dark", 375);
      await openPage(page, "#/sip-domains", "SIP domains");
      await page.getByRole("link", { name: new RegExp(id) }).waitFor();
      expect(await page.getByRole("form", { name: "Create a SIP domain" }).count()).toBe(0);
      expect(await page.getByRole("button", { name: `Edit ${id}` }).count()).toBe(0);
      expect(pageProblems(logs)).toEqual([]);
    } finally {
      await close();
    }
    const other = await newTab(h);
    try {
      await signIn(other.page, h.baseUrl, messagingOnly, projectId);
      await openPage(other.page, `#/sip-domains/${id}`, `SIP domain ${id}`);
      const alert = other.page.getByRole("alert");
      await alert.waitFor();
      expect(await alert.textContent()).toMatch(
        /Could not get the domain: PERMISSION_DENIED.*voice\.sipDomains\.get/,
      );
      await check(other.page, "messaging-only-sip-domain", 1100);
    } finally {
      await other.close();
    }
  });

  it("verifies a collaboration domain: the owner applies a string, the operator accepts it", async () => {
    const h = ready();
    const owned = await newTab(h, { width: 375 });
    const id = `c${Math.random().toString(36).slice(2, 12)}`;
    try {
      await collab(owned.page, id);
      expect(pageProblems(owned.logs)).toEqual([]);
    } catch (err) {
      await screenshot(owned.page, "collab-failure").catch(() => {});
      throw err;
    } finally {
      await owned.close();
    }
    const operator = await newTab(h);
    try {
      await accept(operator.page, id);
      expect(pageProblems(operator.logs)).toEqual([]);
    } finally {
      await operator.close();
    }
  });

  /** The owner creates a collaboration domain and applies a verification string. */
  async function collab(page: Page, id: string): Promise<void> {
    const h = ready();
    await signIn(page, h.baseUrl, owner, projectId);
    await openPage(page, "#/sip-domains", "SIP domains");
    const create = page.getByRole("form", { name: "Create a SIP domain" });
    await create.getByLabel("Domain ID").fill(id);
    await create.getByLabel("Type").selectOption("COLLAB_DIRECT_ROUTING");
    await create.getByText(/the platform's signalling networks/).waitFor();
    await create.getByLabel("Channel limit").fill("200");
    expect(await create.getByLabel("Channel limit").getAttribute("aria-invalid")).toBe("true");
    await create.getByLabel("Channel limit").fill("4");
    await create.getByLabel("Handler URIs (one per line)").fill("https://handler.example.com/collab");
    await create.getByRole("button", { name: "Create domain" }).click();
    await page.getByRole("link", { name: new RegExp(id) }).click();
    await page.getByRole("heading", { level: 1, name: `SIP domain ${id}` }).waitFor();
    expect(await page.getByTestId("collab-verified").textContent()).toBe("Not verified");
    const apply = page.getByRole("form", { name: "Apply a verification string" });
    await apply.getByLabel("Verification string").fill("MS=\u0007");
    expect(await apply.getByLabel("Verification string").getAttribute("aria-invalid")).toBe("true");
    await apply.getByLabel("Verification string").fill("MS=ms12345678");
    await apply.getByRole("button", { name: "Apply" }).click();
    await apply.getByText("The platform has not accepted it yet.").waitFor();
    await check(page, "owner-collab-verification-375", 375);
  }

  /** The operator accepts the domain's published record. */
  async function accept(page: Page, id: string): Promise<void> {
    const h = ready();
    await signIn(page, h.baseUrl, TEST_OPERATOR_TOKEN);
    await page.getByRole("button", { name: `Open ${projectId}` }).click();
    await page.getByRole("heading", { level: 1, name: "Numbers" }).waitFor();
    await openPage(page, `#/sip-domains/${id}`, `SIP domain ${id}`);
    await page.getByText("MS=ms12345678").first().waitFor();
    await page.getByRole("button", { name: "Accept the record" }).click();
    await expect
      .poll(() => page.getByTestId("collab-verified").textContent(), { timeout: 10_000 })
      .toBe("Verified");
    await page.getByText(/^Yes, since /).waitFor();
    await check(page, "operator-collab-verification", 1100);
  }

  it("lets the operator turn a domain's domain-optional mode on, its blocks checked as typed", async () => {
    const h = ready();
    const { id } = await newDomain({});
    const { close, page, logs } = await newTab(h, { width: 375 });
    try {
      await signIn(page, h.baseUrl, TEST_OPERATOR_TOKEN);
      await page.getByRole("button", { name: `Open ${projectId}` }).click();
      await page.getByRole("heading", { level: 1, name: "Numbers" }).waitFor();
      await openPage(page, `#/sip-domains/${id}`, `SIP domain ${id}`);
      const form = page.getByRole("form", { name: "Domain-optional mode" });
      expect(await form.getByTestId("domain-optional").textContent()).toBe("off");
      // No blocks: the API's refusal.
      await form.getByRole("button", { name: "Turn on" }).click();
      await form
        .getByRole("alert")
        .getByText(/Could not change domain-optional mode/)
        .waitFor();
      const blocks = form.getByLabel("CIDR blocks (one per line)");
      await blocks.fill("198.18.7.1/24");
      await form.getByText("host bits are set: the block is 198.18.7.0/24", { exact: false }).waitFor();
      expect(await form.getByRole("button", { name: "Turn on" }).isDisabled()).toBe(true);
      await blocks.fill("198.18.7.0/24");
      await form.getByRole("button", { name: "Turn on" }).click();
      await expect
        .poll(() => form.getByTestId("domain-optional").textContent(), { timeout: 10_000 })
        .toBe("on");
      await page.getByText("198.18.7.0/24 (domain-optional: matched by network)").waitFor();
      await check(page, "operator-domain-optional-375", 375);
      expect(pageProblems(logs)).toEqual([]);
    } finally {
      await close();
    }
  });

  it("draws a SIP call's dialogue as a ladder and downloads its capture", async () => {
    const h = ready();
    const { fqdn } = await newDomain({ cidr: "203.0.113.0/24", handler: `${handler!.base}/voice` });
    // The operator rings the domain from the simulator page.
    let callId = "";
    const operator = await newTab(h, { width: 375 });
    try {
      const { page } = operator;
      await signIn(page, h.baseUrl, TEST_OPERATOR_TOKEN);
      await page.getByRole("button", { name: `Open ${projectId}` }).click();
      await page.getByRole("heading", { level: 1, name: "Numbers" }).waitFor();
      await openPage(page, "#/simulator", "Simulator");
      const inject = page.getByRole("form", { name: "Inject an incoming call" });
      await inject.getByLabel(/A call to a SIP domain/).check();
      await inject.getByLabel("To (a provisioned number)").fill("1001");
      await inject.getByLabel("From").fill("alice");
      await inject.getByLabel("SIP domain (FQDN)").fill(fqdn);
      await inject.getByLabel("Source IPv4 address").fill("203.0.113");
      expect(await inject.getByLabel("Source IPv4 address").getAttribute("aria-invalid")).toBe("true");
      // An address outside the domain's blocks: the API's refusal.
      await inject.getByLabel("Source IPv4 address").fill("192.0.2.99");
      await inject.getByRole("button", { name: "Ring the number" }).click();
      await inject
        .getByRole("alert")
        .getByText(/FAILED_PRECONDITION/)
        .waitFor();
      await inject.getByLabel("Source IPv4 address").fill("203.0.113.10");
      await inject.getByRole("button", { name: "Ring the number" }).click();
      const link = inject.getByRole("status").getByRole("link");
      await link.waitFor();
      const call = (await link.textContent()) ?? "";
      callId = call.slice(call.lastIndexOf("/") + 1);
      await check(page, "operator-simulator-sip-call-375", 375);
      await link.click();
      await page.getByRole("heading", { level: 1, name: `Call ${callId}` }).waitFor();
      await page.getByRole("img", { name: "SIP ladder" }).waitFor();
      await page.setViewportSize({ width: 1100, height: 900 });
      await screenshot(page, "operator-sip-call-ladder");
      expect(pageProblems(operator.logs)).toEqual([]);
    } finally {
      await operator.close();
    }
    const { close, page, logs } = await newTab(h, { width: 375, dark: true });
    try {
      await signIn(page, h.baseUrl, viewer, projectId);
      await openPage(page, `#/call/${callId}`, `Call ${callId}`);
      await page.getByRole("heading", { name: "SIP dialogue" }).waitFor();
      await page.getByRole("img", { name: "SIP ladder" }).waitFor();
      const table = page.getByRole("table", { name: "SIP messages" });
      const line = (text: RegExp) => table.locator("summary").filter({ hasText: text });
      await line(/^INVITE sip:1001@/).waitFor();
      await line(/^SIP\/2\.0 100 Trying$/).waitFor();
      // The call ends (COMPLETED) and the dialogue with it: BYE and its 200 OK.
      await expect
        .poll(() => page.getByTestId("call-state").textContent(), { timeout: 30_000 })
        .toBe("COMPLETED");
      await line(/^BYE /).waitFor({ timeout: 10_000 });
      // The whole message, behind its disclosure, opened from the keyboard.
      await line(/^INVITE sip:1001@/).focus();
      await page.keyboard.press("Enter");
      await table
        .getByText(/Call-ID: /)
        .first()
        .waitFor();
      // The drawing scrolls sideways inside its own region, which takes the focus for the keyboard.
      expect(await page.getByRole("region", { name: /SIP ladder/ }).getAttribute("tabindex")).toBe("0");
      await check(page, "viewer-sip-call-375-dark", 375);

      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("link", { name: "Download the capture (.pcap)" }).click(),
      ]);
      expect(download.suggestedFilename()).toBe(`call-${callId}.pcap`);
      const path = await download.path();
      const bytes = readFileSync(path);
      // libpcap's magic number, little-endian microsecond format.
      expect(bytes.subarray(0, 4).toString("hex")).toBe("d4c3b2a1");
      expect(pageProblems(logs)).toEqual([]);
    } catch (err) {
      await screenshot(page, "sip-ladder-failure").catch(() => {});
      throw err;
    } finally {
      await close();
    }
  });
});
