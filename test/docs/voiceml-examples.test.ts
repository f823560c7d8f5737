/**
 * The VoiceML documents shown to users (```xml blocks of README.md and
 * docs/*.md, and the example handler's documents) parse without error, so
 * copying one never ends a call MARKUP_*. A block opened "```xml config" is
 * another program's configuration file (FreeSWITCH's, say), not VoiceML.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseVoiceMl } from "../../src/telephony/markup/parse.js";

const ROOT = join(import.meta.dirname, "../..");

function xmlBlocks(file: string): { where: string; xml: string }[] {
  const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
  const blocks: { where: string; xml: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```xml") continue;
    const start = i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]!);
    blocks.push({ where: `${file}:${start}`, xml: body.join("\n") });
  }
  return blocks;
}

const files = ["README.md", ...readdirSync(join(ROOT, "docs")).map((f) => `docs/${f}`)].filter((f) =>
  f.endsWith(".md"),
);
const blocks = files.flatMap(xmlBlocks);

describe("VoiceML in the documentation", () => {
  it("has examples", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(5);
  });

  it.each(blocks)("$where parses", ({ xml }) => {
    const result = parseVoiceMl(xml, "application/xml");
    expect(result.ok ? "ok" : `${result.errorCode}: ${result.errorMessage}`).toBe("ok");
    if (result.ok) expect(result.actions.length).toBeGreaterThan(0);
  });

  it("includes the example handler's documents", () => {
    const handler = readFileSync(join(ROOT, "scripts/example-handler.mjs"), "utf8");
    const docs = [...handler.matchAll(/`(<\?xml[\s\S]*?<\/Response>)\s*`/g)].map((m) =>
      m[1]!.replace(/\$\{digits[^}]*\}/, "5"),
    );
    expect(docs).toHaveLength(2);
    for (const xml of docs) expect(parseVoiceMl(xml, "application/xml").ok).toBe(true);
  });
});
