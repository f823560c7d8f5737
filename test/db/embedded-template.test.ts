/**
 * The embedded database's build-time template is loaded only into an empty
 * data directory, and only when the build made one.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { embeddedTemplateFor } from "../../src/db/embedded-template.js";

describe("embeddedTemplateFor", () => {
  const dir = mkdtempSync(join(tmpdir(), "sb-template-"));
  const file = join(dir, "template.tar.gz");
  writeFileSync(file, "dump");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("offers the template for a data directory that does not exist yet, or is empty", async () => {
    expect(await embeddedTemplateFor(join(dir, "missing"), file)?.text()).toBe("dump");
    mkdirSync(join(dir, "empty"));
    expect(await embeddedTemplateFor(join(dir, "empty"), file)?.text()).toBe("dump");
  });

  it("never touches a data directory that has anything in it", () => {
    mkdirSync(join(dir, "used"));
    writeFileSync(join(dir, "used", "PG_VERSION"), "18");
    expect(embeddedTemplateFor(join(dir, "used"), file)).toBeUndefined();
  });

  it("offers nothing when the build made no template (tsx, tests)", () => {
    expect(embeddedTemplateFor(join(dir, "missing"), join(dir, "no-such-template.tar.gz"))).toBeUndefined();
  });
});
