/**
 * complete(id, audio) takes 1 or 2 channels whatever channel_count the
 * PENDING recording was created with (call recording learns whether the
 * call was bridged only when recording stops) and stores the channel count
 * of the audio; 0 or more than 2 channels is FAILED INTERNAL_ERROR.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordings } from "../../src/db/schema/index.js";
import { createLogger } from "../../src/log.js";
import { silence, speechLike } from "../../src/recordings/audio/signal.js";
import { createRecordings, type RecordingsDomain } from "../../src/recordings/index.js";
import { newProject, testConfig } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { parseWav } from "./audio.js";

const RATE = 8000;

describe.each(testDatabases())("recording channel count on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock("2026-03-01T10:00:00.000Z");
  let blobDir: string;
  let domain: RecordingsDomain;

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), "switchboard-channels-"));
    domain = createRecordings({
      config: testConfig({ BLOB_DIR: blobDir }),
      clock,
      log: createLogger("silent"),
      db: database.db,
    });
  });
  afterAll(async () => {
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });

  async function pending(projectId: string, channelCount: number) {
    return domain.createPending({
      projectId,
      callId: "call-1",
      source: "CALL_RECORDING",
      postProcessing: [],
      readyUri: "",
      channelCount,
    });
  }

  const speech = (seed: number) => speechLike({ seed, durationMs: 1000, sampleRate: RATE });

  async function stored(id: string) {
    const [row] = await database.db.select().from(recordings).where(eq(recordings.id, id));
    return row!;
  }

  it("stores the channel count of the audio, 1 or 2, whatever the PENDING row expected", async () => {
    const projectId = (await newProject(database.db)).split("/")[1]!;
    for (const [expected, channels] of [
      [1, [speech(1), speech(2)]],
      [2, [speech(3)]],
      [1, [speech(4)]],
      [2, [speech(5), speech(6)]],
    ] as const) {
      const p = await pending(projectId, expected);
      expect(p.channelCount).toBe(expected);
      const done = await domain.complete(p.id, {
        channels: [...channels],
        sampleRate: RATE,
        startTime: clock.now(),
      });
      expect(done).toMatchObject({ state: "SUCCEEDED", channelCount: channels.length });
      const row = await stored(p.id);
      expect(row.channelCount).toBe(channels.length);
      // The WAV rendition is written with that many channels too.
      const wav = row.renditions.find((r) => r.format === "wav")!;
      const file = await readFile(join(blobDir, ...wav.blobKey.split("/")));
      expect(parseWav(file).channels).toBe(channels.length);
    }
  });

  it("EMPTY takes the audio's count too", async () => {
    const projectId = (await newProject(database.db)).split("/")[1]!;
    const p = await pending(projectId, 1);
    const done = await domain.complete(p.id, {
      channels: [silence(1000, RATE), silence(1000, RATE)],
      sampleRate: RATE,
      startTime: clock.now(),
    });
    expect(done).toMatchObject({ state: "EMPTY", channelCount: 2 });
    expect((await stored(p.id)).channelCount).toBe(2);
  });

  it("0 or more than 2 channels: FAILED INTERNAL_ERROR, channel_count unchanged", async () => {
    const projectId = (await newProject(database.db)).split("/")[1]!;
    for (const channels of [[], [speech(7), speech(8), speech(9)]]) {
      const p = await pending(projectId, 2);
      const done = await domain.complete(p.id, { channels, sampleRate: RATE, startTime: clock.now() });
      expect(done).toMatchObject({
        state: "FAILED",
        errorCode: "INTERNAL_ERROR",
        channelCount: 2,
        renditions: [],
      });
      expect(await stored(p.id)).toMatchObject({
        state: "FAILED",
        errorCode: "INTERNAL_ERROR",
        channelCount: 2,
      });
    }
  });
});
