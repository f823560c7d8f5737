/**
 * Streams.StreamCall: a media stream's RPC. Thin: the first message's
 * setup is checked (the authorization interceptor already checked the
 * permission on its project, src/auth/interceptor.ts), the stream is opened
 * in the registry, later messages go to the session as they come, and the
 * session's responses are sent until it ends (session.ts says how it ends).
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { StreamCallRequest, Streams } from "../../../gen/enfonica/voice/v1beta1/streams_pb.js";
import { badField } from "../../api/errors.js";
import { encodingOf, parseStreamName } from "./domain.js";
import type { StreamRegistry } from "./registry.js";
import { type StreamResponse, StreamSession } from "./session.js";

/**
 * How long after the end of the client's messages a cancellation still
 * counts as one. The wait ends as soon as the RPC's signal aborts, so a
 * cancelled stream ends at once; only a half-closed one waits it out. A
 * loaded machine can take tens of ms between the two events of a reset
 * stream, so this is generous.
 */
const CANCEL_GRACE_MS = 250;

/** Resolves when `signal` aborts or after `ms`, whichever is first. */
function abortedWithin(signal: AbortSignal, ms: number): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Applies a message after the first to the session; throws INVALID_ARGUMENT naming the field. */
function apply(session: StreamSession, request: StreamCallRequest): void {
  const input = request.inputAudio;
  if (input !== undefined) {
    const encoding = input.config === undefined ? undefined : encodingOf(input.config, "input_audio.config");
    session.inputEncoded(input.audio, encoding, input.clear);
  }
  if (request.updateRequestParameters !== undefined) {
    session.updateParameters(request.updateRequestParameters.parameters);
  }
}

/** Reads the client's messages after the first into the session; the end of them ends the stream. */
async function pump(
  iterator: AsyncIterator<StreamCallRequest>,
  session: StreamSession,
  signal: AbortSignal,
): Promise<void> {
  for (;;) {
    let next: IteratorResult<StreamCallRequest>;
    try {
      next = await iterator.next();
    } catch {
      // The request stream broke: the client went away.
      session.end("cancelled");
      return;
    }
    if (session.state === "ended") return;
    if (next.done) {
      // A reset HTTP/2 stream (the client cancelled) ends the request body
      // like a half-close does, and the RPC's signal aborts just after (on
      // the stream's close): look again a moment later. A half-closed
      // stream's signal stays quiet until the response ends.
      await abortedWithin(signal, CANCEL_GRACE_MS);
      session.end(signal.aborted ? "cancelled" : "client");
      return;
    }
    try {
      apply(session, next.value);
    } catch (err) {
      session.end("error", err);
      return;
    }
  }
}

export function streamsService(registry: StreamRegistry): ServiceImpl<typeof Streams> {
  return {
    async *streamCall(requests, ctx): AsyncGenerator<StreamResponse> {
      const iterator = requests[Symbol.asyncIterator]();
      const first = await iterator.next();
      if (first.done || first.value.setup === undefined) {
        throw badField("setup", "the first message must carry the stream's setup");
      }
      const setup = first.value.setup;
      const name = parseStreamName(setup.stream, "setup.stream");
      const encoding = encodingOf(setup.audioConfig, "setup.audio_config");
      const session = new StreamSession(name, encoding, registry.scheduler);
      // The first message's other fields count like a later message's.
      apply(session, first.value);
      registry.add(session);
      const cancel = () => session.end("cancelled");
      ctx.signal.addEventListener("abort", cancel, { once: true });
      try {
        void pump(iterator, session, ctx.signal);
        yield* session.responses;
      } finally {
        ctx.signal.removeEventListener("abort", cancel);
        session.end("cancelled");
      }
    },
  };
}
