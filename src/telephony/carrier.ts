/**
 * The network behind the control plane, as the call engine sees it: place a
 * call, learn how it goes through events, hang up, bridge two legs, and the
 * media operations call-control markup needs. The carrier simulator
 * (src/telephony/simulator) implements it; a SIP trunk adapter can later
 * (INVITE -> 180 ringing(), 200 answered(), 486 busy, 603 rejected, 408 /
 * the caller's timeout no-answer, other 4xx-6xx failed, BYE ended).
 *
 * Contract, whichever implementation:
 * - `placeCall` resolves once the network has taken the call; no event fires
 *   before it resolves.
 * - Events come in this order: `ringing` (at most once; a busy or failed
 *   call may never ring), `answered` (at most once), then `ended` exactly
 *   once. After `ended` the leg is dead: nothing else fires and media
 *   operations resolve at once with what they have.
 * - Callbacks must not throw; what they start asynchronously is the
 *   caller's to await.
 * - Durations are in seconds of call time; an implementation takes time
 *   only from the clock (and scheduler) it was given.
 */

/** What the call engine asks the network for. */
export interface CarrierCallRequest {
  /** The engine's call id, for logs and correlation (SIP Call-ID, say). */
  callId: string;
  /** Destination: E.164 (`+61491570156`) or a SIP URI. */
  to: string;
  /** Caller ID presented, E.164 or SIP URI. */
  from: string;
  /**
   * How long the call may ring before it ends `no-answer`, counted from
   * `placeCall` (the engine resolves the API's default first).
   */
  timeoutSeconds: number;
}

/** Why a leg ended. */
export type EndCause =
  /** The called party was busy (BUSY). */
  | "busy"
  /** The called party declined the call (REJECTED). */
  | "rejected"
  /** Nobody answered within `timeoutSeconds` (NOT_ANSWERED). */
  | "no-answer"
  /** The network could not deliver the call (FAILED). */
  | "failed"
  /** The remote party hung up after answering (COMPLETED). */
  | "remote-hangup"
  /** We hung up (`hangUp()`), answered or not. */
  | "local-hangup";

/** How a leg ended. Calls that never connected carry an error code and message. */
export interface CallEnd {
  cause: EndCause;
  /** Set for busy, rejected, no-answer and failed: the call's `error_code`. */
  errorCode?: string;
  /** A description of `errorCode` for people: the call's `error_message`. */
  errorMessage?: string;
}

/** The kind of audio the remote party sends (what a recording of it holds). */
export type RemoteAudio = "speech" | "silence";

/** What the engine learns when the remote party answers. */
export interface AnsweredMedia {
  remoteAudio: RemoteAudio;
}

/** Callbacks the network calls as the call progresses. */
export interface CarrierEvents {
  /** The destination is ringing (SIP 180/183). */
  ringing(): void;
  /** The remote party answered (SIP 200); media flows. */
  answered(media: AnsweredMedia): void;
  /** The leg ended, for whatever reason; called exactly once. */
  ended(end: CallEnd): void;
}

/** Options of `collectDigits` (the markup's Input). */
export interface CollectDigitsOptions {
  /** Stop after this many digits; 0 means no limit (then `finishOnKey` or the timeout ends it). */
  numDigits: number;
  /** A key (`#`, `*` or a digit) that ends the input; not included in the result. Empty: none. */
  finishOnKey: string;
  /** Seconds to wait for the next key before giving up with what was pressed. */
  timeoutSeconds: number;
}

/** What a play or say did. */
export interface MediaResult {
  /** false when the leg ended (or was hung up) before the audio finished. */
  completed: boolean;
}

/** Audio to play (CarrierLeg.play). */
export interface PlayRequest {
  uri: string;
  durationSeconds: number;
  /** The decoded audio: PCM 16-bit, mono, 8000 Hz. */
  samples?: Int16Array;
}

/** One call leg on the network. */
export interface CarrierLeg {
  readonly callId: string;
  /** Where the leg is: set up, ringing, answered (media flows) or ended. */
  readonly state: "setup" | "ringing" | "answered" | "ended";
  /** The remote party's audio; known once answered. */
  readonly remoteAudio: RemoteAudio | undefined;
  /** The leg this one is bridged with, if any. */
  readonly bridgedWith: CarrierLeg | undefined;

  /**
   * Hangs up (SIP CANCEL before answer, BYE after): pending network timers
   * are cancelled and `ended({ cause: "local-hangup" })` fires at once.
   * Does nothing on an ended leg.
   */
  hangUp(): void;

  /**
   * Connects the audio of this answered leg with another answered leg of
   * the same carrier (the markup's Call/Endpoint). Either leg ending
   * unbridges both; it does not end the other (the engine decides).
   * Throws on a leg that is not answered, of another carrier, or itself.
   */
  bridge(other: CarrierLeg): void;

  /**
   * Plays audio of a known length (the engine fetched it) to the remote
   * party: `samples`, when given, is that audio decoded (PCM 16-bit, mono,
   * 8000 Hz; `durationSeconds` its length), the sound the carrier plays;
   * without it (tones, silence) the carrier makes the sound of the uri.
   */
  play(audio: PlayRequest): Promise<MediaResult>;

  /**
   * Speaks `text` to the remote party (text to speech, src/media/speech);
   * the carrier knows how long it takes. Rejects with a SpeechError when
   * its speech engine cannot speak.
   */
  say(text: string, options?: { language?: string; voice?: string }): Promise<MediaResult>;

  /**
   * Collects keys the remote party presses. Resolves with the keys pressed
   * (without `finishOnKey`), possibly empty; when the leg ends first, with
   * what was pressed until then.
   */
  collectDigits(options: CollectDigitsOptions): Promise<string>;

  /**
   * Answers a ringing incoming leg (SIP 200 to the INVITE): `answered` fires
   * asynchronously (never synchronously). Throws on an outgoing leg or a leg
   * that is not ringing.
   */
  answer(): void;

  /**
   * Refuses a ringing incoming leg (SIP 486 Busy Here for `busy`, 603
   * Decline for `rejected`): `ended({ cause })` fires at once. Throws on an
   * outgoing leg or a leg that is not ringing.
   */
  reject(cause: "busy" | "rejected"): void;

  /**
   * Starts capturing the leg's audio from now (call recording). The capture
   * ends at `stop()` or when the leg ends, whichever comes first; `stop()`
   * is idempotent and returns what was captured.
   */
  capture(): AudioCapture;

  /**
   * The Record action: records the remote party from now until
   * `maxSeconds`, `silenceTimeoutSeconds` of continuous silence from the
   * remote party, the remote party pressing `stopKey`, or the leg ending.
   * Resolves with why it stopped and the audio (one channel: the remote
   * party only).
   */
  recordCaller(options: RecordCallerOptions): Promise<RecordCallerResult>;

  /**
   * Forks the leg's media both ways in real time (the markup's Stream):
   * from now until `close()` or the leg's end, every `frameSeconds` of call
   * time `events.audio` receives the remote party's audio of the frame just
   * past (PCM 16-bit, 8000 Hz; what a recording of the remote party holds),
   * and audio given to `play` is played to the remote party, in order, a
   * frame at a time from the next frame on (so it is heard in recordings of
   * the leg). Frames are fixed from the fork's start and each is whole: a
   * carrier that falls behind delivers the frames due, one `audio` each,
   * never a longer one (src/media/frame-clock.ts). When the leg ends, the
   * audio up to the end is delivered (the last frame possibly shorter) and
   * `events.ended` fires. Throws on a leg that is not answered.
   */
  fork(options: ForkOptions, events: ForkEvents): MediaFork;
}

export interface ForkOptions {
  /** Seconds of call time per frame (> 0). */
  frameSeconds: number;
}

export interface ForkEvents {
  /** The remote party's audio of the frame just past, PCM 16-bit at 8000 Hz. */
  audio(samples: Int16Array): void;
  /** Everything given to `play` has been played (fires once each time the queue runs dry). */
  drained(): void;
  /** The leg ended (after its last audio); nothing fires after. */
  ended(): void;
}

/** A running fork of a leg's media. */
export interface MediaFork {
  /** Queues PCM 16-bit 8000 Hz samples to play after what is queued. */
  play(samples: Int16Array): void;
  /** Drops what is queued and not played yet (the frame being played plays out). */
  clear(): void;
  /** Samples queued and not played yet. */
  readonly queued: number;
  /** Stops both directions; no event fires after. Idempotent. */
  close(): void;
}

/**
 * What was said in captured audio, as far as the network knows it (the
 * simulator knows every word; a real carrier knows none and leaves it out):
 * a stretch of speech on one channel, in ms from the start of the capture.
 */
export interface SpokenSegment {
  channel: number;
  offsetMs: number;
  durationMs: number;
  text: string;
}

/** Audio captured from a leg: PCM 16-bit at `sampleRate`. */
export interface CapturedAudio {
  sampleRate: number;
  /** One array per channel (1 or 2), equal lengths. */
  channels: Int16Array[];
  /** Call time at which capturing started. */
  startTime: Date;
  /** Length in seconds of call time (samples per channel / sampleRate). */
  durationSeconds: number;
  /** What was said, where the network knows it (the simulator); undefined otherwise. */
  speech?: SpokenSegment[];
}

/**
 * A running capture of a leg (call recording). Channels: when the leg was
 * bridged with another leg at any time during the capture, two — [0] the
 * leg's remote party plus what was played to it outside bridges, [1] the
 * remote party of the bridged leg while bridged (silence elsewhere);
 * otherwise one — [0] as above.
 */
export interface AudioCapture {
  /** Stops capturing (idempotent) and returns the audio from start to stop (or the leg's end). */
  stop(): CapturedAudio;
}

/** Options of `recordCaller` (the markup's Record). */
export interface RecordCallerOptions {
  /** Longest recording, in seconds. */
  maxSeconds: number;
  /** Seconds of continuous silence from the remote party that end the recording. */
  silenceTimeoutSeconds: number;
  /** A key (`0-9`, `*`, `#`) that ends the recording when pressed; empty for none. */
  stopKey: string;
}

export interface RecordCallerResult {
  endedBy: "max-duration" | "silence" | "stop-key" | "hangup";
  /** One channel: the remote party. */
  audio: CapturedAudio;
}

/** An incoming call the network offers, as the engine answers it. */
export interface IncomingCallRequest {
  /** The engine's call id. */
  callId: string;
  /** The dialled number (E.164) or SIP URI. */
  to: string;
  /** The caller: E.164, a SIP URI, or empty when withheld. */
  from: string;
  /**
   * The SIP Call-ID of the INVITE that brought the call, when a SIP edge
   * delivered it (the router gives such a call to the SipCarrier holding it).
   */
  sipCallId?: string;
}

/** The network: a simulator today, a SIP trunk adapter later. */
export interface Carrier {
  placeCall(request: CarrierCallRequest, events: CarrierEvents): Promise<CarrierLeg>;
  /**
   * Takes an incoming call the network delivered (SIP 180 to its INVITE):
   * resolves with the leg in state `ringing`; nothing fires until the engine
   * calls `answer()` (then `answered`, and `ended` once the caller hangs up
   * or we do), `reject()` or `hangUp()`.
   */
  receiveCall(request: IncomingCallRequest, events: CarrierEvents): Promise<CarrierLeg>;
}
