import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bearer } from "../../src/auth/interceptor.js";
import { resolveOperatorToken } from "../../src/auth/operator-token.js";
import { hashSecret, keyIdOf, newSecret, safeEqual, secretPrefix } from "../../src/auth/secrets.js";
import { ConfigError, loadConfig } from "../../src/config.js";

describe("API key secrets", () => {
  it("carry their key id and hash deterministically", () => {
    const secret = newSecret("k123");
    expect(keyIdOf(secret)).toBe("k123");
    expect(hashSecret(secret)).toBe(hashSecret(secret));
    expect(hashSecret(secret)).not.toBe(hashSecret(newSecret("k123")));
  });

  it.each([
    ["a random part containing _", `sb_abc_x_yz${"A".repeat(39)}`, "sb_abc_x_yz…"],
    ["a random part starting with _", `sb_abc__-__${"B".repeat(39)}`, "sb_abc__-__…"],
    ["a plain random part", `sb_abc_${"C".repeat(43)}`, "sb_abc_CCCC…"],
  ])("show only four characters of the random part, with %s", (_name, secret, prefix) => {
    expect(keyIdOf(secret)).toBe("abc");
    expect(secretPrefix(secret)).toBe(prefix);
  });

  it.each([
    "",
    "sb_",
    `sb_ABC_${"A".repeat(43)}`,
    `sb_abc_${"A".repeat(42)}`,
    "Bearer x",
    `sb_abc_${"A".repeat(44)}`,
  ])("does not take %j for a key", (s) => {
    expect(keyIdOf(s)).toBeUndefined();
  });

  it("compares in constant time without throwing on different lengths", () => {
    expect(safeEqual("abc", "abc")).toBe(true);
    expect(safeEqual("abc", "abd")).toBe(false);
    expect(safeEqual("abc", "abcd")).toBe(false);
  });

  it.each([
    ["Bearer tok", "tok"],
    ["bearer tok", "tok"],
    ["Bearer   tok  ", "tok"],
    ["Basic dXNlcjpwYXNz", undefined],
    ["Bearer", undefined],
    ["Bearer a b", undefined],
    [null, undefined],
  ])("reads the Authorization header %j", (header, expected) => {
    expect(bearer(header)).toBe(expected);
  });
});

describe("the operator token", () => {
  it("is generated once on the embedded database, kept with mode 0600 and reused", () => {
    const dir = mkdtempSync(join(tmpdir(), "sb-op-"));
    try {
      const config = loadConfig({ DATA_DIR: dir });
      const first = resolveOperatorToken(config);
      expect(first.generated).toBe(true);
      expect(first.token.length).toBeGreaterThanOrEqual(32);
      const file = join(dir, "operator-token");
      expect(readFileSync(file, "utf8").trim()).toBe(first.token);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const second = resolveOperatorToken(config);
      expect(second).toMatchObject({ token: first.token, generated: false });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("comes from SWITCHBOARD_OPERATOR_TOKEN when set, and is required with DATABASE_URL", () => {
    const token = "a-configured-operator-token";
    expect(resolveOperatorToken(loadConfig({ SWITCHBOARD_OPERATOR_TOKEN: token }))).toEqual({
      token,
      generated: false,
    });
    expect(() => loadConfig({ DATABASE_URL: "postgres://x@127.0.0.1/db" })).toThrow(ConfigError);
    expect(() => loadConfig({ SWITCHBOARD_OPERATOR_TOKEN: "short" })).toThrow(/at least 16/);
  });
});
