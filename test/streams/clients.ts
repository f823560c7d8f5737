/**
 * Two independent clients of Streams.StreamCall for the tests, behind one
 * small interface: @grpc/grpc-js with the .proto files loaded by
 * @grpc/proto-loader, and connect-node speaking the Connect protocol over
 * HTTP/2. Both talk to a real listening server.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import {
  AudioEncoding,
  type StreamCallRequest,
  StreamCallRequestSchema,
  Streams,
} from "../../gen/enfonica/voice/v1beta1/streams_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { bearer } from "../support/app.js";
import { protoDir } from "../transport/helpers.js";

export type Encoding = "MULAW" | "ALAW" | "UNSPECIFIED";

/** A message to send, in a form both clients can write. */
export interface Send {
  setup?: { stream: string; encoding?: Encoding; sampleRateHertz?: number; noConfig?: boolean };
  input?: { audio: Uint8Array; clear?: boolean; encoding?: Encoding; sampleRateHertz?: number };
  parameters?: Record<string, string>;
}

/** A response event, as both clients report it. */
export type Event =
  | { kind: "callConnected"; call: string }
  | { kind: "outputAudio"; audio: Uint8Array }
  | { kind: "inputAudioBufferEmpty" };

export interface Outcome {
  /** Canonical code name: OK, DEADLINE_EXCEEDED, ... */
  code: string;
  message: string;
  reason: string | undefined;
  fields: string[];
}

export interface OpenStream {
  events: Event[];
  send(message: Send): void;
  /** Half-closes: the client is done sending. */
  close(): void;
  /** Cancels the RPC. */
  cancel(): void;
  /** Settles with how the RPC ended. */
  done: Promise<Outcome>;
  /** Whether `done` settled. */
  readonly finished: boolean;
}

export interface StreamClient {
  name: string;
  open(token: string): OpenStream;
  close(): void;
}

const CODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(Code)
    .filter(([, v]) => typeof v === "number")
    .map(([k, v]) => [v as number, k.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase()]),
);

function outcomeOf(code: number, message: string, details: Uint8Array | undefined): Outcome {
  let reason: string | undefined;
  const fields: string[] = [];
  if (details !== undefined) {
    const status = fromBinary(StatusSchema, details);
    for (const any of status.details) {
      reason ??= anyUnpack(any, ErrorInfoSchema)?.reason;
      const br = anyUnpack(any, BadRequestSchema);
      if (br) fields.push(...br.fieldViolations.map((v) => v.field));
    }
  }
  return { code: code === 0 ? "OK" : (CODE_NAMES[code] ?? String(code)), message, reason, fields };
}

const GRPC_ENCODING: Record<Encoding, string> = {
  MULAW: "AUDIO_ENCODING_MULAW",
  ALAW: "AUDIO_ENCODING_ALAW",
  UNSPECIFIED: "AUDIO_ENCODING_UNSPECIFIED",
};

/** The grpc-js client (proto-loader, keepCase: proto field names on the wire objects). */
export async function grpcJsClient(address: string): Promise<StreamClient> {
  const def = await protoLoader.load(["enfonica/voice/v1beta1/streams.proto"], {
    includeDirs: [protoDir],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    enfonica: { voice: { v1beta1: { Streams: new (a: string, c: grpc.ChannelCredentials) => grpc.Client } } };
  };
  const client = new pkg.enfonica.voice.v1beta1.Streams(
    address,
    grpc.credentials.createInsecure(),
  ) as grpc.Client & {
    StreamCall(metadata: grpc.Metadata): grpc.ClientDuplexStream<object, Record<string, unknown>>;
  };
  const config = (encoding: Encoding | undefined, rate: number | undefined) => ({
    audio_encoding: GRPC_ENCODING[encoding ?? "MULAW"],
    sample_rate_hertz: rate ?? 0,
  });
  return {
    name: "grpc-js",
    close: () => client.close(),
    open(token) {
      const metadata = new grpc.Metadata();
      metadata.set("authorization", `Bearer ${token}`);
      const call = client.StreamCall(metadata);
      const events: Event[] = [];
      let finished = false;
      call.on("data", (r: Record<string, unknown>) => {
        if (r.event === "call_connected") {
          events.push({ kind: "callConnected", call: (r.call_connected as { call: string }).call });
        } else if (r.event === "output_audio") {
          events.push({
            kind: "outputAudio",
            audio: new Uint8Array((r.output_audio as { audio: Buffer }).audio),
          });
        } else if (r.event === "input_audio_buffer_empty") {
          events.push({ kind: "inputAudioBufferEmpty" });
        }
      });
      const done = new Promise<Outcome>((resolve) => {
        call.on("error", () => {});
        call.on("status", (status: grpc.StatusObject) => {
          finished = true;
          const raw = status.metadata.get("grpc-status-details-bin")[0];
          resolve(
            outcomeOf(
              status.code,
              status.details,
              raw === undefined ? undefined : new Uint8Array(raw as Buffer),
            ),
          );
        });
      });
      return {
        events,
        done,
        get finished() {
          return finished;
        },
        send(m) {
          const out: Record<string, unknown> = {};
          if (m.setup) {
            out.setup = {
              stream: m.setup.stream,
              ...(m.setup.noConfig
                ? {}
                : { audio_config: config(m.setup.encoding, m.setup.sampleRateHertz) }),
            };
          }
          if (m.input) {
            out.input_audio = {
              audio: Buffer.from(m.input.audio),
              clear: m.input.clear ?? false,
              ...(m.input.encoding === undefined
                ? {}
                : { config: config(m.input.encoding, m.input.sampleRateHertz) }),
            };
          }
          if (m.parameters) out.update_request_parameters = { parameters: m.parameters };
          call.write(out);
        },
        close: () => call.end(),
        cancel: () => call.cancel(),
      };
    },
  };
}

const CONNECT_ENCODING: Record<Encoding, AudioEncoding> = {
  MULAW: AudioEncoding.MULAW,
  ALAW: AudioEncoding.ALAW,
  UNSPECIFIED: AudioEncoding.UNSPECIFIED,
};

/** The connect-node client, Connect protocol over HTTP/2. */
export function connectClient(baseUrl: string): StreamClient {
  return {
    name: "connect-node (Connect, HTTP/2)",
    close: () => {},
    open(token) {
      const client = createClient(
        Streams,
        createConnectTransport({ baseUrl, httpVersion: "2", interceptors: [bearer(token)] }),
      );
      const queue: StreamCallRequest[] = [];
      let closed = false;
      let wake: (() => void) | undefined;
      const requests = (async function* () {
        for (;;) {
          const next = queue.shift();
          if (next !== undefined) {
            yield next;
            continue;
          }
          if (closed) return;
          await new Promise<void>((r) => {
            wake = r;
          });
        }
      })();
      const poke = () => {
        const w = wake;
        wake = undefined;
        w?.();
      };
      const abort = new AbortController();
      const events: Event[] = [];
      let finished = false;
      const done = (async (): Promise<Outcome> => {
        try {
          for await (const r of client.streamCall(requests, { signal: abort.signal })) {
            const e = r.event;
            if (e.case === "callConnected") events.push({ kind: "callConnected", call: e.value.call });
            else if (e.case === "outputAudio") events.push({ kind: "outputAudio", audio: e.value.audio });
            else if (e.case === "inputAudioBufferEmpty") events.push({ kind: "inputAudioBufferEmpty" });
          }
          return { code: "OK", message: "", reason: undefined, fields: [] };
        } catch (err) {
          const ce = ConnectError.from(err);
          return {
            code: CODE_NAMES[ce.code] ?? String(ce.code),
            message: ce.rawMessage,
            reason: ce.findDetails(ErrorInfoSchema)[0]?.reason,
            fields: ce.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations.map((v) => v.field)),
          };
        } finally {
          finished = true;
        }
      })();
      const config = (encoding: Encoding | undefined, rate: number | undefined) => ({
        audioEncoding: CONNECT_ENCODING[encoding ?? "MULAW"],
        sampleRateHertz: rate ?? 0,
      });
      return {
        events,
        done,
        get finished() {
          return finished;
        },
        send(m) {
          queue.push(
            create(StreamCallRequestSchema, {
              ...(m.setup && {
                setup: {
                  stream: m.setup.stream,
                  ...(m.setup.noConfig
                    ? {}
                    : { audioConfig: config(m.setup.encoding, m.setup.sampleRateHertz) }),
                },
              }),
              ...(m.input && {
                inputAudio: {
                  audio: m.input.audio,
                  clear: m.input.clear ?? false,
                  ...(m.input.encoding === undefined
                    ? {}
                    : { config: config(m.input.encoding, m.input.sampleRateHertz) }),
                },
              }),
              ...(m.parameters && { updateRequestParameters: { parameters: m.parameters } }),
            }),
          );
          poke();
        },
        close() {
          closed = true;
          poke();
        },
        cancel: () => abort.abort(),
      };
    },
  };
}
