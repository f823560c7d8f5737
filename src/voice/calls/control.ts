/**
 * Call control: what a call does once it is up to us.
 *
 * Handler URIs (an API call's handler_uris, an instance's
 * incoming_call_handler_uris, a programmable SIP domain's
 * call_termination_handler_uris) are walked in order with fall-through:
 * consecutive http(s) URIs are asked for markup with a signed CallRequest
 * (event CALL; signedPost falls through among them); a `tel:` / `sip:` URI
 * forwards the call there (dial.ts). The first markup document obtained
 * takes the call over until it ends; a forwarding that is bridged ends the
 * call COMPLETED when the bridge ends; a forwarding that does not connect,
 * or markup URIs that all fail, fall through to the next URI. When none is
 * left the call ends with the last failure: HANDLER_UNAVAILABLE (FAILED)
 * after markup URIs, the forwarded leg's state and error code after a
 * forwarding (a ringing caller is refused busy / rejected accordingly).
 *
 * Markup (parseVoiceMl) runs action by action:
 * - Say / Play / Wait / Input / Record answer a ringing incoming call first
 *   (`ensureAnswered`); Play fetches and decodes its audio first
 *   (play-audio.ts; PLAY_UNAVAILABLE when it cannot) and plays it; Say
 *   speaks with the carrier's speech engine (SPEECH_UNAVAILABLE when it
 *   fails); Wait plays silence;
 * - Input collects digits; with a NextUri that URI (resolved against the
 *   document's URL) is requested with parameters {digits}; without one the
 *   document goes on;
 * - Redirect requests its URL and runs that document instead;
 * - Reject refuses an unanswered call — REJECTED (or BUSY for
 *   reason="busy"), error_code REJECTED / BUSY — and hangs up an answered
 *   one (COMPLETED);
 * - Call dials its Endpoints (dial.ts); CallerId must be the parent's own
 *   `from` or `to`, or a number of an ACTIVE instance of the project
 *   (otherwise the call ends FAILED CALLER_ID_NOT_ALLOWED); without it the
 *   parent's caller is presented (CallEngine.presentedCaller: a SIP
 *   caller's URI to SIP endpoints, its number to numbers only when the
 *   project holds it), else the parent's `to` when that is a number, else
 *   withheld. With a NextUri the results go there;
 *   without, the document goes on after the bridge;
 * - Record plays a beep (PlayBeep, BEEP_SECONDS), records the caller
 *   (Carrier `recordCaller`) into a PENDING recording (source
 *   RECORD_ACTION, one channel, ready URI = RecordingReadyUri resolved
 *   against the document) whose processing runs in the background; with a
 *   NextUri the parameters are action=RECORD, recording=its name,
 *   estimatedDurationSeconds, endedBy (max-duration, silence, stop-key,
 *   hangup);
 * - RecordCall arms a call recording (call-recording.ts);
 * - Stream answers the call, claims the open media stream it names (in the
 *   call's project; waiting up to TimeoutSeconds for it to open, else the
 *   call ends FAILED STREAM_UNAVAILABLE) and bridges the call with it
 *   (../streams/session.ts) until the stream ends; then, the call still up,
 *   the parameters the stream set are kept for the next request (merged
 *   under the action's own results) and NextUri is requested with
 *   action=STREAM, stream, endedBy, or the document goes on;
 * - the end of a document hangs up: COMPLETED.
 * Errors that end the call FAILED: HANDLER_UNAVAILABLE, MARKUP_* (the
 * parser's code and message), UNSUPPORTED_ACTION (Label, ReceiveFax),
 * CALLER_ID_NOT_ALLOWED, PLAY_UNAVAILABLE, SPEECH_UNAVAILABLE, STREAM_UNAVAILABLE, INTERNAL_ERROR.
 */
import { newResourceId } from "../../api/ids.js";
import { SignedPostError, signedPost } from "../../events/delivery.js";
import { recordExchange } from "../../events/exchanges.js";
import { SpeechError } from "../../media/speech/engine.js";
import {
  type Action,
  type CallAction,
  type PromptAction,
  parseVoiceMl,
  type RecordAction,
  resolveUri,
  type StreamAction,
} from "../../telephony/markup/index.js";
import type { ActiveCall, Outcome } from "./active-call.js";
import { type DialRequest, dial, forwardRequest, type Presented, targetOf } from "./dial.js";
import { type LoadedAudio, PlayAudioError } from "./play-audio.js";
import { callRequestJson } from "./proto.js";

/** The beep before a `<Record>` (PlayBeep). */
export const BEEP_SECONDS = 0.5;

export const ControlErrorCode = {
  HandlerUnavailable: "HANDLER_UNAVAILABLE",
  UnsupportedAction: "UNSUPPORTED_ACTION",
  CallerIdNotAllowed: "CALLER_ID_NOT_ALLOWED",
  PlayUnavailable: "PLAY_UNAVAILABLE",
  SpeechUnavailable: "SPEECH_UNAVAILABLE",
  StreamUnavailable: "STREAM_UNAVAILABLE",
} as const;

interface Document {
  uri: string;
  body: string;
  contentType: string | undefined;
}

type Fetched = ({ ok: true } & Document) | { ok: false; message: string };

/** What a document's run leads to. */
type Next = { kind: "fetch"; uris: readonly string[]; parameters: Record<string, string> } | { kind: "end" };

const isHttp = (uri: string) => /^https?:\/\//i.test(uri);
const isE164 = (value: string) => /^\+[1-9]\d{1,14}$/.test(value);

/** Walks `uris` with fall-through until the call is taken over or every URI failed. */
export async function runHandlers(
  call: ActiveCall,
  uris: readonly string[],
  forwardCaller: Presented,
): Promise<void> {
  let failure: Outcome = {
    state: "FAILED",
    errorCode: ControlErrorCode.HandlerUnavailable,
    errorMessage: "The call has no handler URI",
  };
  let i = 0;
  while (i < uris.length && !call.terminal) {
    if (isHttp(uris[i]!)) {
      let j = i;
      while (j < uris.length && isHttp(uris[j]!)) j++;
      const fetched = await fetchMarkup(call, uris.slice(i, j), {});
      i = j;
      if (fetched.ok) {
        await runDocuments(call, fetched);
        return;
      }
      failure = {
        state: "FAILED",
        errorCode: ControlErrorCode.HandlerUnavailable,
        errorMessage: `No call handler answered: ${fetched.message}`,
      };
    } else {
      const result = await dial(call, forwardRequest(uris[i++]!, forwardCaller));
      if (result.bridged) {
        if (!call.terminal) await call.finish("COMPLETED");
        return;
      }
      failure = result.outcome;
    }
  }
  if (!call.terminal) await call.endWith(failure);
}

async function fetchMarkup(
  call: ActiveCall,
  uris: readonly string[],
  parameters: Record<string, string>,
): Promise<Fetched> {
  const signingKey = await call.engine.signingKey(call.row.projectId);
  const eventId = newResourceId();
  // Parameters a media stream set go with the next request, under the action's own.
  const body = callRequestJson(call.row, { ...call.streamParameters, ...parameters });
  call.streamParameters = {};
  const createTime = call.now;
  const record = (attempts: SignedPostError["attempts"], responseBody: string | undefined) =>
    recordExchange(call.engine.options.db, call.log, {
      id: eventId,
      projectId: call.row.projectId,
      callId: call.row.id,
      uris,
      body,
      attempts,
      responseBody,
      createTime,
      completeTime: call.now,
    });
  try {
    const result = await signedPost(
      { signingKey, uris, eventType: "CALL", eventId, body },
      { now: () => call.now },
      call.engine.options.delivery,
    );
    await record(result.attempts, result.body);
    return { ok: true, uri: result.uri, body: result.body, contentType: result.contentType };
  } catch (err) {
    if (!(err instanceof SignedPostError)) throw err;
    await record(err.attempts, undefined);
    return { ok: false, message: err.message };
  }
}

/** Runs `first` and the documents it leads to until the call ends. */
async function runDocuments(call: ActiveCall, first: Document): Promise<void> {
  let document = first;
  for (;;) {
    if (call.terminal) return;
    const parsed = parseVoiceMl(document.body, document.contentType);
    if (!parsed.ok) {
      await call.finish("FAILED", parsed.errorCode, parsed.errorMessage);
      return;
    }
    const next = await runActions(call, parsed.actions, document.uri);
    if (next.kind === "end" || call.terminal) break;
    const fetched = await fetchMarkup(call, next.uris, next.parameters);
    if (!fetched.ok) {
      await call.finish(
        "FAILED",
        ControlErrorCode.HandlerUnavailable,
        `No call handler answered: ${fetched.message}`,
      );
      return;
    }
    document = fetched;
  }
  if (!call.terminal) await call.finish("COMPLETED");
}

/** Plays a prompt; false when the call ended first (or because of it). */
async function prompt(call: ActiveCall, action: PromptAction, documentUri: string): Promise<boolean> {
  let played: LoadedAudio | undefined;
  if (action.kind === "play") {
    try {
      played = await call.engine.playAudio.load(resolveUri(documentUri, action.url));
    } catch (err) {
      if (!(err instanceof PlayAudioError)) throw err;
      await call.finish("FAILED", ControlErrorCode.PlayUnavailable, `Could not play ${err.message}`);
      return false;
    }
  }
  if (!(await call.ensureAnswered())) return false;
  const leg = call.leg!;
  switch (action.kind) {
    case "say": {
      const options: { language?: string; voice?: string } = {};
      if (action.language !== undefined) options.language = action.language;
      if (action.voice !== undefined) options.voice = action.voice;
      try {
        return (await leg.say(action.text, options)).completed;
      } catch (err) {
        if (!(err instanceof SpeechError)) throw err;
        await call.finish(
          "FAILED",
          ControlErrorCode.SpeechUnavailable,
          `Could not say the text: ${err.message}`,
        );
        return false;
      }
    }
    case "play":
      return (
        await leg.play({
          uri: resolveUri(documentUri, action.url),
          durationSeconds: played!.durationSeconds,
          samples: played!.samples,
        })
      ).completed;
    case "wait":
      return (await leg.play({ uri: "silence:", durationSeconds: action.seconds })).completed;
  }
}

async function runActions(call: ActiveCall, actions: readonly Action[], documentUri: string): Promise<Next> {
  for (const action of actions) {
    if (call.terminal) return { kind: "end" };
    switch (action.kind) {
      case "say":
      case "play":
      case "wait":
        if (!(await prompt(call, action, documentUri))) return { kind: "end" };
        break;
      case "input": {
        for (const p of action.prompts) {
          if (!(await prompt(call, p, documentUri))) return { kind: "end" };
        }
        if (!(await call.ensureAnswered())) return { kind: "end" };
        const digits = await call.leg!.collectDigits({
          numDigits: action.numDigits ?? 0,
          finishOnKey: action.finishOnKey ?? "",
          timeoutSeconds: action.timeoutSeconds,
        });
        if (call.terminal) return { kind: "end" };
        if (action.nextUri !== undefined) {
          return { kind: "fetch", uris: [resolveUri(documentUri, action.nextUri)], parameters: { digits } };
        }
        break;
      }
      case "redirect":
        return { kind: "fetch", uris: [resolveUri(documentUri, action.uri)], parameters: {} };
      case "reject":
        if (call.leg?.state === "answered") await call.finish("COMPLETED");
        else {
          const busy = action.reason === "busy";
          await call.finish(
            busy ? "BUSY" : "REJECTED",
            busy ? "BUSY" : "REJECTED",
            busy ? "The call handler answered busy" : "The call handler rejected the call",
            { reject: busy ? "busy" : "rejected" },
          );
        }
        return { kind: "end" };
      case "call": {
        const request = await dialRequest(call, action);
        if (request === undefined) return { kind: "end" };
        const result = await dial(call, request);
        if (call.terminal) return { kind: "end" };
        if (action.nextUri !== undefined) {
          return {
            kind: "fetch",
            uris: [resolveUri(documentUri, action.nextUri)],
            parameters: result.parameters,
          };
        }
        break;
      }
      case "record": {
        const next = await record(call, action, documentUri);
        if (next !== undefined) return next;
        break;
      }
      case "recordCall":
        call.recorder?.arm(
          {
            trigger: action.trigger === "bridge" ? "BRIDGE" : "ANSWER",
            postProcessing: action.postProcessing.length > 0 ? ["TRIM_SILENCE"] : [],
            readyUri:
              action.recordingReadyUri === undefined ? "" : resolveUri(documentUri, action.recordingReadyUri),
          },
          "markup",
        );
        break;
      case "stream": {
        const next = await stream(call, action, documentUri);
        if (next !== undefined) return next;
        break;
      }
      default:
        await call.finish(
          "FAILED",
          ControlErrorCode.UnsupportedAction,
          `The markup action <${action.element}> is not supported`,
        );
        return { kind: "end" };
    }
  }
  return { kind: "end" };
}

/** The dial request of a `<Call>`, or undefined when its CallerId is not allowed (the call then ended). */
async function dialRequest(call: ActiveCall, action: CallAction): Promise<DialRequest | undefined> {
  const row = call.row;
  let caller: Presented;
  if (action.callerId !== undefined) {
    caller = { callerId: action.callerId };
    if (!(await call.engine.mayPresent(row, action.callerId))) {
      await call.finish(
        "FAILED",
        ControlErrorCode.CallerIdNotAllowed,
        `CallerId ${action.callerId} is neither a party of this call nor a number of an ACTIVE phone number instance of the project`,
      );
      return undefined;
    }
  } else {
    // The caller (a SIP caller's URI to SIP endpoints); to numbers, the call's own number when the caller has none.
    caller = await call.engine.presentedCaller(row);
    if (caller.callerId === "" && isE164(row.to)) caller = { ...caller, callerId: row.to };
  }
  return {
    targets: action.endpoints.map((e) => (e.type === "phone" ? targetOf(e.phoneNumber) : targetOf(e.uri))),
    strategy: action.strategy,
    timeoutSeconds: action.timeoutSeconds,
    maxDurationSeconds: action.maxDurationSeconds,
    ...caller,
  };
}

/** `<Record>`; a Next when the document does not go on. */
async function record(
  call: ActiveCall,
  action: RecordAction,
  documentUri: string,
): Promise<Next | undefined> {
  if (!(await call.ensureAnswered())) return { kind: "end" };
  const leg = call.leg!;
  if (action.playBeep && !(await leg.play({ uri: "tone:beep", durationSeconds: BEEP_SECONDS })).completed) {
    return { kind: "end" };
  }
  const recording = leg.recordCaller({
    maxSeconds: action.maxDurationSeconds,
    silenceTimeoutSeconds: action.timeoutSeconds,
    stopKey: action.stopKey ?? "",
  });
  const recordings = call.engine.options.recordings;
  const pending = await recordings.createPending(
    {
      projectId: call.row.projectId,
      callId: call.row.id,
      source: "RECORD_ACTION",
      postProcessing: action.postProcessing.length > 0 ? ["TRIM_SILENCE"] : [],
      readyUri:
        action.recordingReadyUri === undefined ? "" : resolveUri(documentUri, action.recordingReadyUri),
      channelCount: 1,
    },
    call.engine.holder,
  );
  const result = await recording;
  call.engine.track(
    recordings.complete(
      pending.id,
      {
        channels: result.audio.channels,
        sampleRate: result.audio.sampleRate,
        startTime: result.audio.startTime,
        speech: result.audio.speech,
      },
      call.engine.holder,
    ),
  );
  if (call.terminal) return { kind: "end" };
  if (action.nextUri === undefined) return undefined;
  return {
    kind: "fetch",
    uris: [resolveUri(documentUri, action.nextUri)],
    parameters: {
      action: "RECORD",
      recording: pending.name,
      estimatedDurationSeconds: String(Math.round(result.audio.durationSeconds)),
      endedBy: result.endedBy,
    },
  };
}

/** `<Stream>`; a Next when the document does not go on. */
async function stream(
  call: ActiveCall,
  action: StreamAction,
  documentUri: string,
): Promise<Next | undefined> {
  if (!(await call.ensureAnswered())) return { kind: "end" };
  const projectId = call.row.projectId;
  const name = action.name.startsWith("projects/")
    ? action.name
    : `projects/${projectId}/streams/${action.name}`;
  const claim = name.startsWith(`projects/${projectId}/streams/`)
    ? await call.engine.streams.claim(name, action.timeoutSeconds, call.ended.promise)
    : { ok: false as const, reason: `the stream ${name} is not of the call's project` };
  if (!claim.ok) {
    if (!call.terminal) {
      await call.finish(
        "FAILED",
        ControlErrorCode.StreamUnavailable,
        `Could not connect <Stream>: ${claim.reason}`,
      );
    }
    return { kind: "end" };
  }
  const result = await claim.session.bridge(call.name, call.leg!);
  if (call.terminal) return { kind: "end" };
  call.streamParameters = { ...call.streamParameters, ...result.parameters };
  if (action.nextUri === undefined) return undefined;
  return {
    kind: "fetch",
    uris: [resolveUri(documentUri, action.nextUri)],
    parameters: { action: "STREAM", stream: name, endedBy: result.endedBy },
  };
}
