import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Call, Call_State, Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { SimulatorAdmin, type SimulatorRoute_Outcome } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { encodeMp3 } from "../../src/recordings/audio/mp3.js";
import { speechLike } from "../../src/recordings/audio/signal.js";
import { encodeWav } from "../../src/recordings/audio/wav.js";
import { type App, build } from "../../src/server.js";
import { addBlock, blockAllocator, numberingClients, provision } from "../numbering/support.js";
import { bearer, createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { ManualScheduler } from "../support/scheduler.js";

const T0 = "2026-03-01T00:00:00.000Z";
const TERMINAL = new Set([
  Call_State.COMPLETED,
  Call_State.FAILED,
  Call_State.NOT_ANSWERED,
  Call_State.BUSY,
  Call_State.REJECTED,
]);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?><Response>${body}</Response>`;

describe.each(testDatabases())("<Play> on $name", (backend) => {
  const database = useTestDatabase(backend);
  const scheduler = new ManualScheduler(new TestClock(T0));
  const nextBlock = blockAllocator();
  let app: App;
  let base: string;
  let connect: Client<typeof Calls>;
  let handler: Receiver;
  let states: Receiver;
  let destination = 0;

  beforeAll(async () => {
    app = await build({
      db: database.db,
      clock: scheduler.clock,
      scheduler,
      config: testConfig({
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
        WEBHOOKS_TIMEOUT_MS: "2000",
        WEBHOOKS_POLL_INTERVAL_MS: "20",
        CALL_RATES: "+61=0.05,+1=0.02",
        CALL_RATES_CURRENCY: "AUD",
      }),
    });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
    connect = createClient(
      Calls,
      createConnectTransport({
        baseUrl: base,
        httpVersion: "1.1",
        interceptors: [bearer(TEST_OPERATOR_TOKEN)],
      }),
    );
    handler = await startReceiver();
    states = await startReceiver();
  });
  afterAll(async () => {
    await app?.close();
    await handler?.close();
    await states?.close();
  });
  afterEach(() => {
    handler.requests.length = 0;
    states.requests.length = 0;
    handler.handle((_req, res) => res.end("ok"));
  });

  /** A project owning a fresh ACTIVE number; returns the project and the number. */
  async function owner(): Promise<{ project: string; from: string }> {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, scheduler.clock);
    const from = await addBlock(c, nextBlock(), 10);
    await provision(c, project, from);
    return { project, from };
  }

  /** A destination of its own with a simulator route. */
  async function route(init: {
    outcome?: SimulatorRoute_Outcome;
    ringSeconds?: number;
    talkSeconds?: number;
    digits?: string;
    errorCode?: string;
  }): Promise<string> {
    destination++;
    const to = `+614915702${String(destination).padStart(2, "0")}`;
    await createTestClient(SimulatorAdmin, database.db, scheduler.clock).createRoute({
      route: { prefix: to, ...init },
    });
    return to;
  }

  /** Moves call time forward in small steps (letting real HTTP happen) until the call is over. */
  async function runToEnd(name: string, maxSeconds = 600): Promise<Call> {
    for (let t = 0; t < maxSeconds * 10; t++) {
      const call = await connect.getCall({ name });
      if (TERMINAL.has(call.state) && app.engine.activeCount === 0) return call;
      await scheduler.advance(0.1);
      await sleep(1);
    }
    throw new Error(`call ${name} did not end within ${maxSeconds} s of call time`);
  }

  function createCall(project: string, from: string, to: string, path = "/start", extra = {}) {
    return connect.createCall({
      parent: project,
      call: {
        to,
        from,
        labels: { team: "test" },
        options: {
          handlerUris: [`${handler.base}${path}`],
          stateUpdateUri: `${states.base}/state`,
          ...extra,
        },
      },
    });
  }

  /** Serves markup by path, and audio files. */
  function serveWithAudio(
    documents: Record<string, string | number>,
    audio: Record<string, [string, Buffer]>,
  ): void {
    handler.handle((req, res) => {
      const path = req.path.split("?")[0]!;
      const file = audio[path];
      if (file !== undefined) {
        res.setHeader("content-type", file[0]);
        res.end(file[1]);
        return;
      }
      const doc = documents[path];
      if (typeof doc === "string") {
        res.setHeader("content-type", "application/xml");
        res.end(doc);
      } else {
        res.statusCode = typeof doc === "number" ? doc : 404;
        res.end("no");
      }
    });
  }

  const samples = speechLike({ seed: 7, durationMs: 3200, sampleRate: 8000 });
  const wav = encodeWav([samples], 8000);
  const mp3 = encodeMp3([samples], 8000, 32);

  it("lasts as long as its WAV or MP3 file (fetched once, relative URIs resolved)", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    serveWithAudio(
      { "/start": xml("<Play>/media/hold.wav</Play><Play>media/hold.wav</Play>") },
      { "/media/hold.wav": ["audio/wav", wav] },
    );
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    // Two plays of 3.2 s each; the answer time also holds the markup fetch (call time moves in
    // 0.1 s steps while real HTTP happens), under a second here.
    const answered = Number(ended.answerDuration?.seconds) + ended.answerDuration!.nanos / 1e9;
    expect(answered).toBeGreaterThanOrEqual(6.4);
    expect(answered).toBeLessThan(7.4);
    // The second play of the same URI is measured from the cache.
    expect(handler.requests.filter((r) => r.path === "/media/hold.wav")).toHaveLength(1);

    const mp3Uri = `/media/${destination}.mp3`;
    serveWithAudio({ "/start": xml(`<Play>${mp3Uri}</Play>`) }, { [mp3Uri]: ["audio/mpeg", mp3] });
    const second = await runToEnd((await createCall(project, from, to)).name);
    const seconds = Number(second.answerDuration?.seconds) + second.answerDuration!.nanos / 1e9;
    // MP3 frames are 72 ms at 8 kHz (the encoder pads up to two); plus the fetch, as above.
    expect(seconds).toBeGreaterThanOrEqual(3.2 - 0.001);
    expect(seconds).toBeLessThan(3.2 + 1.2);
  });

  it("audio that cannot be fetched or measured ends the call FAILED PLAY_UNAVAILABLE", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    serveWithAudio(
      {
        "/missing": xml("<Say>Hi</Say><Play>/nothing.wav</Play>"),
        "/html": xml("<Play>/page</Play>"),
        "/page": xml("<Say>not audio</Say>"),
      },
      {},
    );
    const missing = await runToEnd((await createCall(project, from, to, "/missing")).name);
    expect(missing.state).toBe(Call_State.FAILED);
    expect(missing.errorCode).toBe("PLAY_UNAVAILABLE");
    expect(missing.errorMessage).toContain("/nothing.wav answered HTTP 404");
    const html = await runToEnd((await createCall(project, from, to, "/html")).name);
    expect(html.state).toBe(Call_State.FAILED);
    expect(html.errorCode).toBe("PLAY_UNAVAILABLE");
    expect(html.errorMessage).toContain("/page is not audio");
  });
});
