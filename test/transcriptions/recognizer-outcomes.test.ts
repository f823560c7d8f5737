/**
 * Which speech to text a recording gets, and how its transcription ends,
 * with the transcriber the service builds from its settings
 * (createRecordings' default: SelectingTranscriber over the simulator's and
 * OpenAiTranscriber) against a stub recognizer on 127.0.0.1, on a real
 * database (PGlite and PostgreSQL):
 * - audio whose words the network knows (the simulator's) keeps those
 *   words, and the recognizer is not asked;
 * - real audio (no known words) goes to the recognizer: its segments become
 *   the utterances; a 5xx, garbage, or no answer in time ends FAILED with
 *   the reason logged, never a crash;
 * - real audio with no recognizer configured ends FAILED with
 *   NO_SPEECH_RECOGNIZER, no words made up.
 */
import { Writable } from "node:stream";
import { eq } from "drizzle-orm";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newResourceId } from "../../src/api/ids.js";
import { systemClock } from "../../src/clock.js";
import { transcriptions } from "../../src/db/schema/index.js";
import { SimulatorTranscriber } from "../../src/telephony/simulator/transcriber.js";
import { type TranscribedRecording, TranscriptionsDomain } from "../../src/transcriptions/domain.js";
import { OpenAiTranscriber } from "../../src/transcriptions/openai-transcriber.js";
import { SelectingTranscriber } from "../../src/transcriptions/select.js";
import type { TranscriptionAudio } from "../../src/transcriptions/transcriber.js";
import { newProject } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type StubRecognizer, startStubRecognizer, wavSamples } from "./stub-recognizer.js";

const left = Int16Array.from({ length: 16000 }, (_, i) => Math.round(8000 * Math.sin(i / 3)));
const right = Int16Array.from({ length: 16000 }, (_, i) => (i % 40) * 100 - 2000);
/** Two seconds of a real call's audio: nobody knows what was said. */
const REAL: TranscriptionAudio = { channels: [left, right], sampleRate: 8000, speech: undefined };

let stub: StubRecognizer;
beforeAll(async () => {
  stub = await startStubRecognizer();
});
afterAll(() => stub.close());

describe.each(testDatabases())("transcriptions by the configured recognizer on $name", (backend) => {
  const database = useTestDatabase(backend);
  const logged: Record<string, unknown>[] = [];
  const log = pino(
    { level: "warn" },
    new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split("\n")) if (line !== "") logged.push(JSON.parse(line));
        done();
      },
    }),
  );

  function domain(recognizer: boolean, requestTimeoutMs = 10_000) {
    return new TranscriptionsDomain({
      db: database.db,
      clock: systemClock,
      log,
      transcriber: new SelectingTranscriber(
        new SimulatorTranscriber(),
        recognizer
          ? new OpenAiTranscriber({
              url: stub.url,
              apiKey: "sk-bench-0123",
              model: "whisper-large-v3",
              timeoutMs: requestTimeoutMs,
            })
          : undefined,
      ),
      timeoutMs: 20_000,
    });
  }

  async function transcribe(d: TranscriptionsDomain, audio: TranscriptionAudio) {
    const projectId = (await newProject(database.db)).split("/")[1]!;
    const callId = newResourceId();
    const id = newResourceId();
    const r: TranscribedRecording = {
      projectId,
      callId,
      id,
      name: `projects/${projectId}/calls/${callId}/recordings/${id}`,
      state: "SUCCEEDED",
      channelCount: 2,
      durationMs: 2000,
      transcriptionReadyUri: "",
    };
    const { row } = await database.db.transaction((tx) => d.open(tx, r, newResourceId(), null));
    await d.make(row, r.durationMs, audio, undefined);
    const [done] = await database.db.select().from(transcriptions).where(eq(transcriptions.id, row.id));
    return done!;
  }

  it("real audio goes to the recognizer: each channel a WAV with the fields and key; its segments the utterances", async () => {
    stub.received.length = 0;
    stub.answer = (n) => ({
      status: 200,
      body: JSON.stringify({
        text: "whatever",
        segments: [{ id: 0, start: 0.25, end: 1.5, text: ` words of channel ${n} ` }],
      }),
    });
    const row = await transcribe(domain(true), REAL);
    expect(row.state).toBe("COMPLETED");
    expect(row.utterances).toEqual([
      { channel: 0, offsetMs: 250, durationMs: 1250, text: "words of channel 0" },
      { channel: 1, offsetMs: 250, durationMs: 1250, text: "words of channel 1" },
    ]);
    expect(stub.received).toHaveLength(2);
    for (const [i, r] of stub.received.entries()) {
      expect(r.path).toBe("/v1/audio/transcriptions");
      expect(r.contentType).toMatch(/^multipart\/form-data; boundary=/);
      expect(r.auth).toBe("Bearer sk-bench-0123");
      expect(r.fields).toEqual({ model: "whisper-large-v3", response_format: "verbose_json" });
      expect(r.fileType).toBe("audio/wav");
      expect(r.fileName).toBe(`channel-${i}.wav`);
      const wav = wavSamples(r.file);
      expect(wav.sampleRate).toBe(8000);
      expect(wav.channels).toBe(1);
      expect([...wav.samples]).toEqual([...(i === 0 ? left : right)]);
    }
  });

  it("audio whose words the simulated network knows keeps them; the recognizer is not asked", async () => {
    stub.received.length = 0;
    const row = await transcribe(domain(true), {
      ...REAL,
      speech: [{ channel: 1, offsetMs: 100, durationMs: 600, text: "known words" }],
    });
    expect(row.state).toBe("COMPLETED");
    expect(row.utterances).toEqual([{ channel: 1, offsetMs: 100, durationMs: 600, text: "known words" }]);
    expect(stub.received).toEqual([]);
  });

  it("a 5xx, a garbage answer, or none in time: FAILED with the reason logged, no utterances", async () => {
    const cases: Array<[string, StubRecognizer["answer"], RegExp]> = [
      ["503", () => ({ status: 503, body: '{"error":"overloaded"}' }), /HTTP 503/],
      ["not JSON", () => ({ status: 200, body: "<html>oops" }), /not JSON/],
      ["JSON null", () => ({ status: 200, body: "null" }), /no segments/],
      ["segments not a list", () => ({ status: 200, body: '{"segments":"x"}' }), /no segments/],
      ["no answer", () => "hang", /did not answer within 500 ms/],
    ];
    for (const [what, answer, reason] of cases) {
      stub.answer = answer;
      logged.length = 0;
      const row = await transcribe(domain(true, 500), REAL);
      expect(row.state, what).toBe("FAILED");
      expect(row.utterances, what).toEqual([]);
      const warn = logged.find((l) => l.msg === "transcription failed");
      expect(String((warn?.err as { message?: string } | undefined)?.message), what).toMatch(reason);
    }
  });

  it("real audio with no recognizer configured: FAILED with NO_SPEECH_RECOGNIZER, nothing sent anywhere", async () => {
    stub.received.length = 0;
    logged.length = 0;
    const row = await transcribe(domain(false), REAL);
    expect(row.state).toBe("FAILED");
    expect(row.utterances).toEqual([]);
    expect(stub.received).toEqual([]);
    const warn = logged.find((l) => l.msg === "transcription failed");
    const err = warn?.err as { code?: string; message?: string } | undefined;
    expect(err?.code).toBe("NO_SPEECH_RECOGNIZER");
    expect(err?.message).toMatch(/TRANSCRIBER_URL/);
  });
});
