import { describe, expect, it } from "vitest";
import { Call_State } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { encodeMp3 } from "../../src/recordings/audio/mp3.js";
import { speechLike } from "../../src/recordings/audio/signal.js";
import { encodeWav } from "../../src/recordings/audio/wav.js";
import { callHarness, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

describe.each(testDatabases())("<Play> on $name", (backend) => {
  const database = useTestDatabase(backend);
  const harness = callHarness(database, {
    env: { CALL_RATES: "+61=0.05,+1=0.02", CALL_RATES_CURRENCY: "AUD" },
  });
  const { handler, owner, route, runToEnd, createCall } = harness;

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
    // 0.1 s steps while real HTTP happens): under a second on a quiet machine, 1.0 s seen in a
    // loaded full run: 2 s allowed.
    const answered = Number(ended.answerDuration?.seconds) + ended.answerDuration!.nanos / 1e9;
    expect(answered).toBeGreaterThanOrEqual(6.4);
    expect(answered).toBeLessThan(6.4 + 2);
    // The second play of the same URI is measured from the cache.
    expect(handler.requests.filter((r) => r.path === "/media/hold.wav")).toHaveLength(1);

    const mp3Uri = `/media/${harness.destinations}.mp3`;
    serveWithAudio({ "/start": xml(`<Play>${mp3Uri}</Play>`) }, { [mp3Uri]: ["audio/mpeg", mp3] });
    const second = await runToEnd((await createCall(project, from, to)).name);
    const seconds = Number(second.answerDuration?.seconds) + second.answerDuration!.nanos / 1e9;
    // MP3 frames are 72 ms at 8 kHz (the encoder pads up to two); plus the fetch, as above.
    expect(seconds).toBeGreaterThanOrEqual(3.2 - 0.001);
    expect(seconds).toBeLessThan(3.2 + 2);
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
