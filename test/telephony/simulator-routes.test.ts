/**
 * Simulator routes: validation (each violation names its field), defaults,
 * and the stored routes — longest prefix wins, the built-in default, unique
 * prefixes, keyset pages — on every backend.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createSimulatorCarrier } from "../../src/telephony/simulator/index.js";
import { SimulatorRoutesRepository } from "../../src/telephony/simulator/repository.js";
import {
  DEFAULT_ROUTE,
  type RouteInput,
  SimulatorRoutes,
  validateRoute,
} from "../../src/telephony/simulator/routes.js";
import { collectPages, expectCode, expectInvalid, testConfig, violationFields } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { ManualScheduler } from "../support/scheduler.js";

const BLANK: RouteInput = {
  prefix: "",
  outcome: undefined,
  ringSeconds: undefined,
  talkSeconds: undefined,
  audio: undefined,
  digits: "",
  errorCode: "",
  errorMessage: "",
};

function violations(input: Partial<RouteInput>): string[] {
  try {
    validateRoute({ ...BLANK, ...input });
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    return violationFields(err as ConnectError);
  }
  return [];
}

describe("simulator route validation", () => {
  const cases: [string, Partial<RouteInput>, string[]][] = [
    ["empty prefix (every destination)", { prefix: "" }, []],
    ["plus alone", { prefix: "+" }, []],
    ["a full E.164 prefix", { prefix: "+614915701561234" }, []],
    ["prefix of 16 digits", { prefix: "+6149157015612345" }, ["route.prefix"]],
    ["prefix without plus", { prefix: "6149157" }, ["route.prefix"]],
    ["prefix with a space", { prefix: "+61 491" }, ["route.prefix"]],
    ["unknown outcome", { outcome: "HOLD" as never }, ["route.outcome"]],
    ["ring 0", { ringSeconds: 0 }, []],
    ["ring 600", { ringSeconds: 600 }, []],
    ["ring 601", { ringSeconds: 601 }, ["route.ring_seconds"]],
    ["ring negative", { ringSeconds: -1 }, ["route.ring_seconds"]],
    ["ring fractional", { ringSeconds: 1.5 }, ["route.ring_seconds"]],
    ["talk 86400", { talkSeconds: 86_400 }, []],
    ["talk 86401", { talkSeconds: 86_401 }, ["route.talk_seconds"]],
    ["unknown audio", { audio: "MUSIC" as never }, ["route.audio"]],
    ["digits with * and #", { digits: "0123456789*#" }, []],
    ["digits with a letter", { digits: "12a" }, ["route.digits"]],
    ["65 digits", { digits: "1".repeat(65) }, ["route.digits"]],
    ["error code with ANSWER", { errorCode: "X" }, ["route.error_code"]],
    ["error message with ANSWER", { outcome: "ANSWER", errorMessage: "x" }, ["route.error_message"]],
    ["error code with FAIL", { outcome: "FAIL", errorCode: "SIP_503" }, []],
    ["error code with a space", { outcome: "FAIL", errorCode: "SIP 503" }, ["route.error_code"]],
    ["error code too long", { outcome: "BUSY", errorCode: "E".repeat(65) }, ["route.error_code"]],
    ["error message too long", { outcome: "BUSY", errorMessage: "m".repeat(501) }, ["route.error_message"]],
    ["unknown message outcome", { messageOutcome: "BOUNCE" as never }, ["route.message_outcome"]],
    ["message deliver 86400", { messageDeliverSeconds: 86_400 }, []],
    ["message deliver 86401", { messageDeliverSeconds: 86_401 }, ["route.message_deliver_seconds"]],
    ["message deliver negative", { messageDeliverSeconds: -1 }, ["route.message_deliver_seconds"]],
    ["message error code with DELIVER", { messageErrorCode: "X" }, ["route.message_error_code"]],
    ["message error message with DELIVER", { messageErrorMessage: "x" }, ["route.message_error_message"]],
    ["message error code with FAIL", { messageOutcome: "FAIL", messageErrorCode: "30007" }, []],
    [
      "message error code with a space",
      { messageOutcome: "UNDELIVERED", messageErrorCode: "A B" },
      ["route.message_error_code"],
    ],
    [
      "several at once",
      { prefix: "x", ringSeconds: 700, talkSeconds: -1, digits: "x" },
      ["route.prefix", "route.ring_seconds", "route.talk_seconds", "route.digits"],
    ],
  ];
  it.each(cases)("%s", (_name, input, fields) => {
    expect(violations(input).sort()).toEqual([...fields].sort());
  });

  it("fills in the defaults: ANSWER, ring 2 s, talk 30 s, SPEECH", () => {
    expect(validateRoute({ ...BLANK, prefix: "+61" })).toEqual({
      prefix: "+61",
      outcome: "ANSWER",
      ringSeconds: 2,
      talkSeconds: 30,
      audio: "SPEECH",
      digits: "",
      words: "",
      errorCode: "",
      errorMessage: "",
      messageOutcome: "DELIVER",
      messageDeliverSeconds: 1,
      messageErrorCode: "",
      messageErrorMessage: "",
    });
  });

  it("defaults the error code of each message outcome that does not deliver", () => {
    expect(validateRoute({ ...BLANK, messageOutcome: "FAIL" })).toMatchObject({
      messageErrorCode: "CARRIER_REJECTED",
    });
    expect(
      validateRoute({ ...BLANK, messageOutcome: "UNDELIVERED", messageDeliverSeconds: 5 }),
    ).toMatchObject({
      messageErrorCode: "UNREACHABLE",
      messageDeliverSeconds: 5,
    });
  });

  it("words: blanks collapsed, at most 1000 characters, not for a SILENCE party", () => {
    expect(validateRoute({ ...BLANK, words: "  I would\n like   a table " }).words).toBe(
      "I would like a table",
    );
    expect(() => validateRoute({ ...BLANK, words: "x".repeat(1001) })).toThrow(/route\.words/);
    expect(() => validateRoute({ ...BLANK, audio: "SILENCE", words: "hello" })).toThrow(/route\.words/);
  });

  it("defaults the error code and message of each outcome that does not connect", () => {
    const codes = (["BUSY", "REJECT", "NO_ANSWER", "FAIL"] as const).map(
      (outcome) => validateRoute({ ...BLANK, outcome }).errorCode,
    );
    expect(codes).toEqual(["BUSY", "REJECTED", "NO_ANSWER", "CARRIER_ERROR"]);
    expect(validateRoute({ ...BLANK, outcome: "FAIL", errorCode: "Q850_34" })).toMatchObject({
      errorCode: "Q850_34",
      errorMessage: "The network could not deliver the call",
    });
  });
});

describe.each(testDatabases())("simulator routes on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock();
  const routes = () => new SimulatorRoutes(new SimulatorRoutesRepository(database.db), clock);
  // Routes are global: each test uses prefixes of its own country code.
  const input = (prefix: string, more: Partial<RouteInput> = {}): RouteInput => ({
    ...BLANK,
    prefix,
    ...more,
  });

  it("resolves the longest matching prefix, and the built-in default when none matches", async () => {
    const r = routes();
    const short = await r.create(input("+8", { outcome: "BUSY" }));
    const long = await r.create(input("+8149157", { outcome: "FAIL", errorCode: "SIP_503" }));
    const mid = await r.create(input("+814", { outcome: "REJECT" }));
    expect((await r.resolve("+81491570156")).id).toBe(long.id);
    expect((await r.resolve("+81400000000")).id).toBe(mid.id);
    expect((await r.resolve("+81200000000")).id).toBe(short.id);
    expect((await r.resolve("+8149157")).id).toBe(long.id);
    expect(await r.resolve("+999")).toBe(DEFAULT_ROUTE);
    expect(await r.resolve("sip:bob@example.com")).toBe(DEFAULT_ROUTE);
    for (const x of [short, long, mid]) await r.delete(x.id);
    expect(await r.resolve("+81491570156")).toBe(DEFAULT_ROUTE);
  });

  it("lets an empty-prefix route replace the default", async () => {
    const r = routes();
    const all = await r.create(input("", { outcome: "NO_ANSWER" }));
    try {
      expect((await r.resolve("+999")).id).toBe(all.id);
      expect((await r.resolve("sip:bob@example.com")).outcome).toBe("NO_ANSWER");
    } finally {
      await r.delete(all.id);
    }
  });

  it("refuses a prefix that is taken with ALREADY_EXISTS naming the route", async () => {
    const r = routes();
    const first = await r.create(input("+82"));
    const err = await expectCode(r.create(input("+82", { outcome: "BUSY" })), Code.AlreadyExists);
    expect(err.message).toContain(`simulator/routes/${first.id}`);
    await r.delete(first.id);
  });

  it("refuses an invalid route with INVALID_ARGUMENT before storing anything", async () => {
    await expectInvalid(routes().create(input("+83", { ringSeconds: 601 })), ["route.ring_seconds"]);
    expect(await routes().resolve("+8300")).toBe(DEFAULT_ROUTE);
  });

  it("gets, lists newest first in pages, and deletes; unknown ids are NOT_FOUND", async () => {
    const r = routes();
    const made = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      made.push(await r.create(input(`+84${i}`)));
    }
    expect(await r.get(made[2]!.id)).toEqual(made[2]);
    const { items, pages } = await collectPages(async (token) => r.list(2, token));
    const ours = items.filter((x) => x.prefix.startsWith("+84")).map((x) => x.id);
    expect(ours).toEqual(made.map((x) => x.id).reverse());
    expect(pages).toBeGreaterThanOrEqual(3);
    for (const x of made) await r.delete(x.id);
    await expectCode(r.get(made[0]!.id), Code.NotFound);
    await expectCode(r.delete(made[0]!.id), Code.NotFound);
  });

  it("drives a SimulatorCarrier from the stored routes", async () => {
    const r = routes();
    const busy = await r.create(input("+85", { outcome: "BUSY", errorMessage: "Line engaged" }));
    const scheduler = new ManualScheduler();
    const carrier = createSimulatorCarrier(database.db, clock, testConfig(), { scheduler });
    const ended: unknown[] = [];
    await carrier.placeCall(
      { callId: "c", to: "+85123", from: "+61255501234", timeoutSeconds: 30 },
      {
        ringing: () => ended.push("ringing"),
        answered: () => ended.push("answered"),
        ended: (e) => ended.push(e),
      },
    );
    await scheduler.advance(1);
    expect(ended).toEqual([{ cause: "busy", errorCode: "BUSY", errorMessage: "Line engaged" }]);
    await r.delete(busy.id);
  });
});
