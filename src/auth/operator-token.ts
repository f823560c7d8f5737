/**
 * The operator token: from configuration, or — on the embedded database when
 * unset — generated on first start, kept in the data directory (mode 0600)
 * and printed once with a hint on the first steps.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../config.js";

export interface OperatorToken {
  token: string;
  /** True when this start generated it (so it should be shown once). */
  generated: boolean;
  file?: string;
}

export function resolveOperatorToken(config: Config): OperatorToken {
  if (config.operatorToken !== undefined) return { token: config.operatorToken, generated: false };
  const file = join(config.dataDir, "operator-token");
  try {
    const token = readFileSync(file, "utf8").trim();
    if (token.length >= 16) return { token, generated: false, file };
  } catch {
    // not there yet: generate below
  }
  mkdirSync(config.dataDir, { recursive: true });
  const token = `sbop_${randomBytes(32).toString("base64url")}`;
  writeFileSync(file, `${token}\n`, { mode: 0o600, flag: "w" });
  return { token, generated: true, file };
}

export function firstStartHint(t: OperatorToken, baseUrl: string): string {
  return [
    "",
    "  Switchboard generated an operator token (shown only now; kept in " +
      (t.file ?? "the data directory") +
      "):",
    "",
    `    export SWITCHBOARD_OPERATOR_TOKEN=${t.token}`,
    "",
    "  First steps:",
    `    npx switchboard --url ${baseUrl} projects create my-project`,
    `    npx switchboard --url ${baseUrl} keys create --project my-project --role roles/owner`,
    "",
  ].join("\n");
}
