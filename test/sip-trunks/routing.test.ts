/**
 * Trunk routing's units: the enabled trunks read through a short cache (a
 * change seen once it expires, or at once after invalidate()), a failed read
 * keeping the last list, source networks matched, passwords opened through
 * the secret box (a password that cannot be opened kept out, not fatal);
 * the numbers a trunk's INVITE and an outgoing call may name; the targets.
 */
import { describe, expect, it } from "vitest";
import type { SipTrunkRow } from "../../src/db/schema/index.js";
import { trunkNumberOf } from "../../src/telephony/sip-carrier/inbound.js";
import { e164Of, trunkTargets } from "../../src/telephony/sip-carrier/trunk-targets.js";
import { TrunkRouting } from "../../src/voice/sip-trunks/routing.js";
import { SecretBox } from "../../src/voice/sip-trunks/secret-box.js";

function row(id: string, over: Partial<SipTrunkRow> = {}): SipTrunkRow {
  const now = new Date(0);
  return {
    id,
    displayName: "",
    address: "192.0.2.1",
    transport: "UDP",
    username: "",
    password: null,
    inboundNetworks: [],
    enabled: true,
    priority: 10,
    createTime: now,
    updateTime: now,
    ...over,
  } as SipTrunkRow;
}

function setup(rows: SipTrunkRow[], box = new SecretBox(undefined)) {
  let now = 0;
  let reads = 0;
  let fail = false;
  const routing = new TrunkRouting(
    {
      enabled: async () => {
        reads++;
        if (fail) throw new Error("database down");
        return rows;
      },
    },
    box,
    { now: () => new Date(now) } as never,
  );
  return {
    routing,
    advance: (ms: number) => {
      now += ms;
    },
    reads: () => reads,
    failing: (v: boolean) => {
      fail = v;
    },
  };
}

describe("TrunkRouting", () => {
  it("reads the enabled trunks once per 2 s, sees changes after that or after invalidate()", async () => {
    const rows = [row("a")];
    const t = setup(rows);
    expect((await t.routing.trunks()).map((x) => x.id)).toEqual(["a"]);
    rows.push(row("b"));
    t.advance(1000);
    expect((await t.routing.trunks()).map((x) => x.id)).toEqual(["a"]);
    expect(t.reads()).toBe(1);
    t.advance(1500);
    expect((await t.routing.trunks()).map((x) => x.id)).toEqual(["a", "b"]);
    rows.length = 0;
    t.routing.invalidate();
    expect(await t.routing.any()).toBe(false);
    expect(t.reads()).toBe(3);
  });

  it("keeps the last list when a read fails, and throws with none", async () => {
    const t = setup([row("a")]);
    t.failing(true);
    await expect(t.routing.trunks()).rejects.toThrow("database down");
    t.failing(false);
    await t.routing.trunks();
    t.failing(true);
    t.advance(5000);
    expect((await t.routing.trunks()).map((x) => x.id)).toEqual(["a"]);
  });

  it("finds the trunk of a source address by its inbound networks, in priority order", async () => {
    const t = setup([
      row("a", { inboundNetworks: ["203.0.113.0/24"] }),
      row("b", { inboundNetworks: ["198.51.100.16/28", "203.0.113.7/32"] }),
    ]);
    expect((await t.routing.trunkOfSource("203.0.113.7"))?.id).toBe("a");
    expect((await t.routing.trunkOfSource("198.51.100.31"))?.id).toBe("b");
    expect((await t.routing.trunkOfSource("::ffff:198.51.100.20"))?.id).toBe("b");
    expect(await t.routing.trunkOfSource("198.51.100.32")).toBeUndefined();
    expect(await t.routing.trunkOfSource("2001:db8::1")).toBeUndefined();
    expect(await t.routing.trunkOfSource("not an address")).toBeUndefined();
  });

  it("opens passwords through the secret box; one sealed under another key is left out", async () => {
    const box = new SecretBox("a key of sixteen characters");
    const other = new SecretBox("another key of sixteen chars");
    const t = setup(
      [
        row("a", { username: "u", password: box.seal("pw-a") }),
        row("b", { username: "u", password: other.seal("pw-b") }),
      ],
      box,
    );
    const [a, b] = await t.routing.trunks();
    expect(a!.password).toBe("pw-a");
    expect(b!.password).toBeUndefined();
    expect(b!.passwordError).toMatch(/SIP_CREDENTIALS_KEY|key/i);
  });
});

describe("trunk numbers and targets", () => {
  it.each([
    ["+61491570156", "+61491570156"],
    ["61491570156", "+61491570156"],
    ["%2B61491570156", "+61491570156"],
    ["+61-491-570-156", "+61491570156"],
    ["0491570156", undefined],
    ["alice", undefined],
    ["+0123", undefined],
    ["%E0%A4%A", undefined],
  ])("an INVITE's user part %j is the number %j", (user, number) => {
    expect(trunkNumberOf(user)).toBe(number);
  });

  it.each([
    ["+61491570156", "+61491570156"],
    ["tel:+61491570156", "+61491570156"],
    ["tel:+61-491-570-156;phone-context=x", "+61491570156"],
    ["tel:0491570156", undefined],
    ["sip:+61491570156@example.com", undefined],
  ])("an outgoing call to %j goes to the number %j", (to, number) => {
    expect(e164Of(to)).toBe(number);
  });

  it("gives one target per trunk, in order: Request-URI with user=phone, the transport's port", async () => {
    const t = setup([
      row("a", { address: "192.0.2.1", username: "u", password: "plain:pw" }),
      row("b", { address: "192.0.2.2:5070", transport: "TCP" }),
      row("c", { address: "[2001:db8::1]", transport: "TLS" }),
    ]);
    const targets = await trunkTargets({ trunks: () => t.routing.trunks() })("tel:+61491570156");
    expect(targets.map((x) => [x.uri, x.destination, x.trunk?.id, x.trunk?.digest !== undefined])).toEqual([
      [
        "sip:+61491570156@192.0.2.1;user=phone",
        { transport: "UDP", address: "192.0.2.1", port: 5060 },
        "a",
        true,
      ],
      [
        "sip:+61491570156@192.0.2.2:5070;transport=tcp;user=phone",
        { transport: "TCP", address: "192.0.2.2", port: 5070 },
        "b",
        false,
      ],
      [
        "sip:+61491570156@[2001:db8::1];transport=tls;user=phone",
        { transport: "TLS", address: "2001:db8::1", port: 5061 },
        "c",
        false,
      ],
    ]);
    expect(await trunkTargets({ trunks: () => t.routing.trunks() })("sip:bob@example.com")).toEqual([]);
  });
});
