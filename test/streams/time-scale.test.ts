/**
 * A media stream on the simulator's own timers (no test scheduler): the
 * service as it runs, with SIMULATOR_TIME_SCALE 0.1 (a second of call time
 * takes 100 ms), on PGlite and PostgreSQL. The stream is paced by the scaled
 * timers: a 10-second call streams its audio within about a second of
 * wall-clock time, in chunks of 0.16 s x 0.1 of audio (128 samples) but the
 * last, and ends OK with it.
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

describe.each(testDatabases())("a media stream on a scaled simulator on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let handler: Receiver;
  let client: StreamClient;
  let baseUrl: string;

  beforeAll(async () => {
    app = await build({
      db: database.db,
      config: testConfig({ SIMULATOR_TIME_SCALE: "0.1", WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true" }),
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

  it("streams the call's audio paced by the scaled timers and ends OK with the call", async () => {
    const project = await newProject(database.db);
    const numbering = numberingClients(database.db, systemClock);
    const from = await addBlock(numbering, blockAllocator()(), 10);
    await provision(numbering, project, from);
    const to = "+61491570299";
    await createTestClient(SimulatorAdmin, database.db, systemClock).createRoute({
      route: { prefix: to, ringSeconds: 1, talkSeconds: 10, audio: SimulatorRoute_Audio.SPEECH },
    });
    const id = `s-${randomBytes(6).toString("hex")}`;
    handler.handle((_req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(xml(`<Stream Name="${id}"/>`));
    });
    const stream = client.open(TEST_OPERATOR_TOKEN);
    stream.send({ setup: { stream: `${project}/streams/${id}`, encoding: "MULAW" } });
    for (let i = 0; i < 1000 && app.engine.streams.size === 0 && !stream.finished; i++) await sleep(5);
    // Through the app's port: the app's engine drives the call (and holds the stream).
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
    const audio = stream.events.flatMap((e) => (e.kind === "outputAudio" ? [e.audio] : []));
    expect(audio.length).toBeGreaterThan(1);
    // Each chunk but the last is one frame of the scaled clock: 0.16 s x 0.1 = 128 samples.
    const sizes = audio.map((a) => a.length);
    expect(sizes.slice(0, -1)).toEqual(sizes.slice(0, -1).map(() => 128));
    expect(sizes.at(-1)).toBeLessThanOrEqual(128);
    let call = await calls.getCall({ name: created.name });
    for (let i = 0; i < 1000 && !TERMINAL.has(call.state); i++) {
      await sleep(5);
      call = await calls.getCall({ name: created.name });
    }
    expect(call.state).toBe(Call_State.COMPLETED);
    // Samples count by the service clock (compressed by the scale, like recordings): at most
    // the call's answered time.
    const samples = audio.reduce((n, a) => n + a.length, 0);
    const answeredMs =
      Number(call.answerDuration?.seconds ?? 0n) * 1000 + (call.answerDuration?.nanos ?? 0) / 1e6;
    expect(samples / 8).toBeLessThanOrEqual(answeredMs + 1);
  });
});
