/**
 * How a transcription ends, whatever the speech to text does: the domain on
 * a real database (PGlite and PostgreSQL) with Transcribers that answer,
 * reject or never answer; the TRANSCRIPTION_READY webhook queued in the
 * outbox with the terminal state, once.
 */
import { fromJsonString } from "@bufbuild/protobuf";
import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import {
  Transcription_State,
  TranscriptionSchema,
} from "../../gen/enfonica/voice/v1beta1/transcriptions_pb.js";
import { newResourceId } from "../../src/api/ids.js";
import { systemClock } from "../../src/clock.js";
import { transcriptions, webhookEvents } from "../../src/db/schema/index.js";
import { createLogger } from "../../src/log.js";
import { SimulatorTranscriber } from "../../src/telephony/simulator/transcriber.js";
import { type TranscribedRecording, TranscriptionsDomain } from "../../src/transcriptions/domain.js";
import type { Transcriber, TranscriptionAudio } from "../../src/transcriptions/transcriber.js";
import { newProject } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

const AUDIO: TranscriptionAudio = {
  channels: [new Int16Array(8000), new Int16Array(8000)],
  sampleRate: 8000,
  speech: [
    { channel: 1, offsetMs: 200, durationMs: 800, text: "hello there" },
    { channel: 0, offsetMs: 0, durationMs: 400, text: "hi" },
  ],
};

describe.each(testDatabases())("transcription outcomes on $name", (backend) => {
  const database = useTestDatabase(backend);

  function domain(transcriber: Transcriber, timeoutMs = 5000) {
    return new TranscriptionsDomain({
      db: database.db,
      clock: systemClock,
      log: createLogger("silent"),
      transcriber,
      timeoutMs,
    });
  }

  async function recording(
    state: TranscribedRecording["state"],
    readyUri = "https://hooks.example.com/t",
  ): Promise<TranscribedRecording> {
    const projectId = (await newProject(database.db)).split("/")[1]!;
    const callId = newResourceId();
    const id = newResourceId();
    return {
      projectId,
      callId,
      id,
      name: `projects/${projectId}/calls/${callId}/recordings/${id}`,
      state,
      channelCount: 2,
      durationMs: 1000,
      transcriptionReadyUri: readyUri,
    };
  }

  /** What RecordingsDomain does with a recording's end: `open` in its transaction, then `make`. */
  async function transcribe(
    d: TranscriptionsDomain,
    r: TranscribedRecording,
    audio: TranscriptionAudio | undefined,
  ): Promise<void> {
    const { row } = await database.db.transaction((tx) => d.open(tx, r, newResourceId(), null));
    await d.make(row, r.durationMs, audio, undefined);
  }

  async function outcome(r: TranscribedRecording) {
    const rows = await database.db.select().from(transcriptions).where(eq(transcriptions.recordingId, r.id));
    const hooks = await database.db
      .select()
      .from(webhookEvents)
      .where(
        and(eq(webhookEvents.projectId, r.projectId), eq(webhookEvents.eventType, "TRANSCRIPTION_READY")),
      );
    return { rows, hooks };
  }

  it("the simulator's transcriber: COMPLETED, utterances in time order, one webhook with them", async () => {
    const r = await recording("SUCCEEDED");
    await transcribe(domain(new SimulatorTranscriber()), r, AUDIO);
    const { rows, hooks } = await outcome(r);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.state).toBe("COMPLETED");
    expect(rows[0]!.durationMs).toBe(1000);
    expect(rows[0]!.utterances.map((u) => u.text)).toEqual(["hi", "hello there"]);
    expect(hooks).toHaveLength(1);
    expect(hooks[0]!.uris).toEqual(["https://hooks.example.com/t"]);
    const sent = fromJsonString(TranscriptionSchema, hooks[0]!.body);
    expect(sent.state).toBe(Transcription_State.COMPLETED);
    expect(sent.recording).toBe(r.name);
    expect(sent.utterances).toHaveLength(2);
  });

  it("a transcriber that rejects, or takes too long: FAILED, with its webhook", async () => {
    const failing: Transcriber = { transcribe: () => Promise.reject(new Error("engine down")) };
    const slow: Transcriber = { transcribe: () => new Promise(() => {}) };
    for (const [transcriber, timeout] of [
      [failing, 5000],
      [slow, 50],
    ] as const) {
      const r = await recording("SUCCEEDED");
      await transcribe(domain(transcriber, timeout), r, AUDIO);
      const { rows, hooks } = await outcome(r);
      expect(rows.map((t) => t.state)).toEqual(["FAILED"]);
      expect(rows[0]!.utterances).toEqual([]);
      expect(hooks.map((h) => fromJsonString(TranscriptionSchema, h.body).state)).toEqual([
        Transcription_State.FAILED,
      ]);
    }
  });

  it("utterances outside the audio or on a channel it lacks are dropped; audio it did not make fails the simulator", async () => {
    const r = await recording("SUCCEEDED", "");
    const wild: Transcriber = {
      transcribe: async () => [
        { channel: 2, offsetMs: 0, durationMs: 100, text: "no such channel" },
        { channel: 0, offsetMs: 900, durationMs: 500, text: "clipped" },
        { channel: 0, offsetMs: 2000, durationMs: 100, text: "after the end" },
        { channel: 1, offsetMs: 10, durationMs: 10, text: "   " },
      ],
    };
    await transcribe(domain(wild), r, AUDIO);
    const { rows, hooks } = await outcome(r);
    expect(rows[0]!.utterances).toEqual([{ channel: 0, offsetMs: 900, durationMs: 100, text: "clipped" }]);
    // No ready_uri: no webhook.
    expect(hooks).toEqual([]);
    const foreign = await recording("SUCCEEDED");
    await transcribe(domain(new SimulatorTranscriber()), foreign, { ...AUDIO, speech: undefined });
    expect((await outcome(foreign)).rows.map((t) => t.state)).toEqual(["FAILED"]);
  });

  it("EMPTY recordings are COMPLETED without utterances, FAILED ones FAILED", async () => {
    const empty = await recording("EMPTY");
    await transcribe(domain(new SimulatorTranscriber()), empty, undefined);
    expect((await outcome(empty)).rows.map((t) => [t.state, t.utterances.length])).toEqual([
      ["COMPLETED", 0],
    ]);
    const failed = await recording("FAILED");
    await transcribe(domain(new SimulatorTranscriber()), failed, undefined);
    expect((await outcome(failed)).rows.map((t) => t.state)).toEqual(["FAILED"]);
    expect((await outcome(failed)).hooks).toHaveLength(1);
  });
});
