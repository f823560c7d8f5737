/**
 * Output frames end to end on real time (issue #30): the service as it runs
 * (SIMULATOR_TIME_SCALE 1, its own timers), a grpc-js client of
 * Streams.StreamCall as a bot developer would write it (μ-law, 8000 Hz),
 * and a handler answering `<Stream Name=".." TimeoutSeconds="10"
 * NextUri="/after"/>`, on PGlite and PostgreSQL. While the call runs the
 * test holds the event loop (the service's too: it runs in this process)
 * busy for a few ms every few tens of ms, and once for 400 ms (2.5 frames),
 * so the frame timers fire late. Every output_audio chunk but the last is
 * still exactly 1280 bytes (0.16 s); the last is at most that; all of them
 * together are no more than the call's answered time.
 */
import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Call_State, Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { SimulatorAdmin, SimulatorRoute_Audio } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { systemClock } from "../../src/clock.js";
import { type App, build } from "../../src/server.js";
import { addBlock, blockAllocator, numberingClients, provision } from "../numbering/support.js";
import { bearer, createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { sleep, TERMINAL, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { grpcJsClient, type StreamClient } from "./clients.js";

/** Bytes of μ-law in one 0.16 s frame at 8000 Hz. */
const FRAME = 1280;

/** Holds the event loop for `ms` of wall-clock time. */
function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

describe.each(testDatabases())("output_audio frames on real time on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let handler: Receiver;
  let client: StreamClient;
  let baseUrl: string;

  beforeAll(async () => {
    app = await build({
      db: database.db,
      config: testConfig({ SIMULATOR_TIME_SCALE: "1", WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true" }),
    });
    const address = await app.listen(0, "127.0.0.1");
    baseUrl = `http://127.0.0.1:${address.port}`;
    handler = await startReceiver();
    client = await grpcJsClient(`127.0.0.1:${address.port}`);
  });
  afterAll(async () => {
    client?.close();
    await handler?.close();
    await app?.close();
  });

  it("every output_audio chunk but the last is 1280 bytes, however late the timers fire", async () => {
    const project = await newProject(database.db);
    const numbering = numberingClients(database.db, systemClock);
    const from = await addBlock(numbering, blockAllocator()(), 10);
    await provision(numbering, project, from);
    const to = "+61491570298";
    await createTestClient(SimulatorAdmin, database.db, systemClock).createRoute({
      route: { prefix: to, ringSeconds: 1, talkSeconds: 3, audio: SimulatorRoute_Audio.SPEECH },
    });
    const id = `bot-${randomBytes(6).toString("hex")}`;
    handler.handle((req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(
        xml(req.path === "/after" ? "" : `<Stream Name="${id}" TimeoutSeconds="10" NextUri="/after"/>`),
      );
    });
    const stream = client.open(TEST_OPERATOR_TOKEN);
    stream.send({ setup: { stream: `${project}/streams/${id}`, encoding: "MULAW", sampleRateHertz: 8000 } });
    for (let i = 0; i < 1000 && app.engine.streams.size === 0 && !stream.finished; i++) await sleep(5);

    const chunks = () => stream.events.flatMap((e) => (e.kind === "outputAudio" ? [e.audio] : []));
    // The busy loop: 2 to 12 ms held every 23 ms, and 400 ms once three chunks are out.
    let n = 0;
    let heldLong = false;
    const busy = setInterval(() => {
      if (!heldLong && chunks().length >= 3) {
        heldLong = true;
        busyWait(400);
      } else busyWait(2 + ((n++ * 7) % 11));
    }, 23);
    try {
      const calls = createClient(
        Calls,
        createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [bearer(TEST_OPERATOR_TOKEN)] }),
      );
      const created = await calls.createCall({
        parent: project,
        call: { to, from, options: { handlerUris: [`${handler.base}/start`] } },
      });
      const outcome = await stream.done;
      expect(outcome.code).toBe("OK");
      expect(stream.events[0]).toEqual({ kind: "callConnected", call: created.name });
      expect(heldLong).toBe(true);

      const sizes = chunks().map((c) => c.length);
      // Three seconds of talk, less the time to fetch the markup (and a busy machine's delays).
      expect(sizes.length).toBeGreaterThanOrEqual(5);
      expect(sizes.slice(0, -1)).toEqual(sizes.slice(0, -1).map(() => FRAME));
      expect(sizes.at(-1)).toBeGreaterThan(0);
      expect(sizes.at(-1)).toBeLessThanOrEqual(FRAME);

      let call = await calls.getCall({ name: created.name });
      for (let i = 0; i < 1000 && !TERMINAL.has(call.state); i++) {
        await sleep(5);
        call = await calls.getCall({ name: created.name });
      }
      expect(call.state).toBe(Call_State.COMPLETED);
      // The audio is call time from the stream's start (after the answer) to the end.
      const answeredMs =
        Number(call.answerDuration?.seconds ?? 0n) * 1000 + (call.answerDuration?.nanos ?? 0) / 1e6;
      const total = sizes.reduce((a, b) => a + b, 0);
      expect(total / 8).toBeLessThanOrEqual(answeredMs + 1);
    } finally {
      clearInterval(busy);
    }
  });
});
