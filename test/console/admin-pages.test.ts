/**
 * The operator's credential pages in headless Chromium against the real
 * app: an API key disabled (its holder's sign-in is then refused with the
 * server's message), enabled again and deleted (asked to confirm); a
 * service account disabled and deleted; the project's signing key shown to
 * a credential that may read it (not to a viewer) and rotated by the
 * operator. axe-core and screenshots.
 *
 * Without Chromium this test FAILS (it never skips).
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

describe.each(testDatabases().slice(0, 1))("the console's credential pages ($name)", (backend) => {
  const database = useTestDatabase(backend);
  let h: ConsoleHarness | undefined;
  let projectId = "";
  let keyId = "";
  let secret = "";
  let owner = "";
  let viewer = "";
  let setupError: unknown;

  beforeAll(async () => {
    try {
      h = await startConsole(database.db);
      const project = await newProject(database.db);
      projectId = project.slice("projects/".length);
      const key = await newApiKey(database.db, [{ project, roles: ["roles/viewer"] }]);
      keyId = key.name.slice("apiKeys/".length);
      secret = key.secret;
      owner = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
      viewer = (await newApiKey(database.db, [{ project, roles: ["roles/viewer"] }])).secret;
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

  async function check(page: Page, name: string): Promise<void> {
    await screenshot(page, name);
    expect(await seriousViolations(page), `axe on ${name}`).toEqual([]);
  }

  /** A sign-in with `token` on a fresh tab: the alert's text when refused, "" when it worked. */
  async function trySignIn(token: string): Promise<string> {
    const h = ready();
    const { close, page } = await newTab(h);
    try {
      await page.goto(`${h.baseUrl}/console/`);
      await page.getByLabel("Token").fill(token);
      await page.getByLabel("Project ID").fill(projectId);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page
        .getByRole("alert")
        .or(page.getByRole("button", { name: "Sign out" }))
        .first()
        .waitFor();
      return (await page.getByRole("alert").count()) > 0
        ? ((await page.getByRole("alert").textContent()) ?? "")
        : "";
    } finally {
      await close();
    }
  }

  it("disables, enables and deletes an API key and a service account", async () => {
    const h = ready();
    const { close, page, logs } = await newTab(h);
    try {
      await signIn(page, h.baseUrl, TEST_OPERATOR_TOKEN);
      await openPage(page, "#/api-keys", "API keys");
      await page.getByRole("button", { name: `Disable ${keyId}` }).click();
      await page.getByRole("button", { name: `Enable ${keyId}` }).waitFor();
      expect(await trySignIn(secret)).toMatch(/Sign-in refused: UNAUTHENTICATED/);
      await page.getByRole("button", { name: `Enable ${keyId}` }).click();
      await page.getByRole("button", { name: `Disable ${keyId}` }).waitFor();
      expect(await trySignIn(secret)).toBe("");
      await check(page, "operator-api-keys-actions");
      await page.getByRole("button", { name: `Delete ${keyId}` }).click();
      await page.getByRole("button", { name: `Confirm: delete ${keyId}` }).click();
      await expect.poll(() => page.getByText(keyId).count(), { timeout: 10_000 }).toBe(0);
      expect(await trySignIn(secret)).toMatch(/Sign-in refused: UNAUTHENTICATED/);

      await openPage(page, "#/service-accounts", "Service accounts");
      await page.getByLabel("Account ID").fill("admin-bot");
      await page.getByLabel("Project ID").fill(projectId);
      await page.getByRole("button", { name: "Create service account" }).click();
      await page.getByRole("button", { name: "Disable admin-bot" }).click();
      await page.getByRole("button", { name: "Enable admin-bot" }).waitFor();
      await page.getByRole("cell", { name: /Disabled/ }).waitFor();
      await check(page, "operator-service-accounts-actions");
      await page.getByRole("button", { name: "Delete admin-bot" }).click();
      await page.getByRole("button", { name: "Confirm: delete admin-bot" }).click();
      await page.getByText("No service accounts yet.").waitFor();
      expect(pageProblems(logs)).toEqual([]);
    } catch (err) {
      await screenshot(page, "admin-failure").catch(() => {});
      throw err;
    } finally {
      await close();
    }
  });

  it("shows the signing key to a credential that may read it, and lets the operator rotate it", async () => {
    const h = ready();
    const v = await newTab(h, { width: 375, dark: true });
    try {
      await signIn(v.page, h.baseUrl, viewer, projectId);
      await openPage(v.page, "#/webhooks", "Webhooks");
      await v.page.getByText("No webhooks sent yet.").waitFor();
      // The viewer role may not read the key: not offered.
      expect(await v.page.getByRole("heading", { name: "Signing key" }).count()).toBe(0);
    } finally {
      await v.close();
    }
    let before = "";
    const o = await newTab(h, { width: 375 });
    try {
      await signIn(o.page, h.baseUrl, owner, projectId);
      await openPage(o.page, "#/webhooks", "Webhooks");
      await o.page.getByRole("button", { name: "Show the signing key" }).click();
      const key = o.page.getByTestId("signing-key");
      await expect.poll(() => key.inputValue(), { timeout: 10_000 }).toMatch(/^[A-Za-z0-9+/]{86}==$/);
      before = await key.inputValue();
      // Rotating is the operator's.
      expect(await o.page.getByRole("button", { name: /^Rotate/ }).count()).toBe(0);
      await check(o.page, "owner-signing-key-375");
      expect(pageProblems(o.logs)).toEqual([]);
    } finally {
      await o.close();
    }
    const op = await newTab(h);
    try {
      const { page } = op;
      await signIn(page, h.baseUrl, TEST_OPERATOR_TOKEN);
      await page.getByRole("button", { name: `Open ${projectId}` }).click();
      await openPage(page, "#/webhooks", "Webhooks");
      await page.getByRole("button", { name: "Show the signing key" }).click();
      const key = page.getByTestId("signing-key");
      await expect.poll(() => key.inputValue(), { timeout: 10_000 }).toBe(before);
      await page.getByRole("button", { name: "Rotate the signing key" }).click();
      await page.getByRole("button", { name: "Confirm: rotate the signing key" }).click();
      await page.getByText(/Rotated: webhooks are signed with the new key/).waitFor();
      await expect.poll(() => key.inputValue(), { timeout: 10_000 }).not.toBe(before);
      expect(pageProblems(op.logs)).toEqual([]);
    } finally {
      await op.close();
    }
  });
});
