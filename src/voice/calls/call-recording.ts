/**
 * Call recording: recordings of a whole call from a trigger on (source
 * CALL_RECORDING), armed by configuration — the call's `recording`, copied
 * from ApiCallOptions.recording, the number instance's
 * call_recording_trigger or the SIP domain's call_recording — or by the
 * markup's `<RecordCall>`. At most one recording per origin (configuration,
 * markup): a second `<RecordCall>` while one is armed or running is ignored.
 *
 * - ANSWER starts when the call is answered (at once when it already is);
 * - BRIDGE starts when the call is first bridged with another leg, so what
 *   was played before is not in the recording. A call never bridged has no
 *   recording from a BRIDGE trigger.
 * The capture (Carrier `capture()`) runs on the call's own leg — the
 * parent leg of a two-leg call, so the recording's name is always under the
 * parent — until the call ends. It has two channels when the call was
 * bridged while recording (the caller, the other party), one otherwise. A
 * PENDING recording is created when capturing starts; when the call ends,
 * the audio goes to RecordingsDomain.complete (processing, renditions,
 * RECORDING_READY), tracked by the engine so that shutdown waits for it.
 */
import type { CallRecordingSettings } from "../../db/schema/index.js";
import type { AudioCapture } from "../../telephony/carrier.js";
import type { ActiveCall } from "./active-call.js";

type Origin = "configuration" | "markup";

interface Entry {
  origin: Origin;
  settings: CallRecordingSettings;
  capture?: AudioCapture | undefined;
  /** The PENDING recording's id, once created. */
  created?: Promise<string | undefined>;
}

export class CallRecorder {
  private readonly entries: Entry[] = [];
  private bridged = false;

  constructor(private readonly call: ActiveCall) {}

  /** Arms a recording; starts it at once when its trigger already happened. */
  arm(settings: CallRecordingSettings, origin: Origin): void {
    if (this.entries.some((e) => e.origin === origin)) {
      this.call.log.info(
        { call: this.call.name },
        "a call recording of this origin exists; RecordCall ignored",
      );
      return;
    }
    const entry: Entry = { origin, settings };
    this.entries.push(entry);
    const leg = this.call.leg;
    const answered = leg?.state === "answered";
    if ((settings.trigger === "ANSWER" && answered) || (settings.trigger === "BRIDGE" && leg?.bridgedWith)) {
      this.start(entry);
    }
  }

  onAnswer(): void {
    for (const e of this.entries)
      if (e.settings.trigger === "ANSWER" && e.capture === undefined) this.start(e);
  }

  onBridge(): void {
    this.bridged = true;
    for (const e of this.entries)
      if (e.settings.trigger === "BRIDGE" && e.capture === undefined) this.start(e);
  }

  private start(entry: Entry): void {
    const leg = this.call.leg;
    if (leg === undefined || this.call.terminal) return;
    entry.capture = leg.capture();
    const recordings = this.call.engine.options.recordings;
    const row = this.call.row;
    entry.created = recordings
      .createPending(
        {
          projectId: row.projectId,
          callId: row.id,
          source: "CALL_RECORDING",
          postProcessing: entry.settings.postProcessing,
          readyUri: entry.settings.readyUri,
          transcribe: entry.settings.transcribe ?? false,
          transcriptionReadyUri: entry.settings.transcriptionReadyUri ?? "",
          channelCount: this.bridged || entry.settings.trigger === "BRIDGE" ? 2 : 1,
        },
        this.call.engine.holder,
      )
      .then(
        (r) => r.id,
        (err) => {
          this.call.log.error({ err, call: this.call.name }, "could not create a call recording");
          return undefined;
        },
      );
    // The call's next writes (IN_PROGRESS on answer) wait for the recording's row.
    this.call.holdWritesFor(entry.created);
  }

  /** Stops every running capture and hands the audio to processing (the call ended). */
  stopAll(): void {
    for (const entry of this.entries) {
      const capture = entry.capture;
      const created = entry.created;
      if (capture === undefined || created === undefined) continue;
      entry.capture = undefined;
      const audio = capture.stop();
      this.call.engine.track(
        created.then(async (id) => {
          if (id === undefined) return;
          await this.call.engine.options.recordings.complete(
            id,
            {
              channels: audio.channels,
              sampleRate: audio.sampleRate,
              startTime: audio.startTime,
              speech: audio.speech,
            },
            this.call.engine.holder,
          );
        }),
      );
    }
  }
}
