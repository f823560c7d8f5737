/**
 * A stub OpenAI-compatible speech recognizer on 127.0.0.1: it records what
 * it receives (the Authorization header, the multipart fields, the WAV file
 * of each request, parsed with the platform's own multipart reader) and
 * answers with what the test sets — a status and body, or no answer at all
 * (`hang`) to exercise timeouts.
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecognizerRequest {
  path: string;
  auth: string | undefined;
  contentType: string;
  fields: Record<string, string>;
  fileName: string | undefined;
  fileType: string | undefined;
  file: Buffer;
}

export type RecognizerAnswer = { status: number; body: string } | "hang";

export interface StubRecognizer {
  url: string;
  received: RecognizerRequest[];
  answer: (n: number, req: RecognizerRequest) => RecognizerAnswer;
  close(): Promise<void>;
}

export async function startStubRecognizer(): Promise<StubRecognizer> {
  const hanging: ServerResponse[] = [];
  const stub: StubRecognizer = {
    url: "",
    received: [],
    answer: () => ({ status: 200, body: '{"segments":[]}' }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const contentType = req.headers["content-type"] ?? "";
    const fields: Record<string, string> = {};
    let file = Buffer.alloc(0);
    let fileName: string | undefined;
    let fileType: string | undefined;
    try {
      const form = await new Request("http://x/", {
        method: "POST",
        headers: { "content-type": contentType },
        body: Buffer.concat(chunks),
      }).formData();
      for (const [k, v] of form.entries()) {
        if (typeof v === "string") fields[k] = v;
        else {
          file = Buffer.from(await v.arrayBuffer());
          fileName = (v as File).name;
          fileType = v.type;
        }
      }
    } catch {
      // Not multipart: recorded with empty fields, the test sees it.
    }
    const request: RecognizerRequest = {
      path: req.url ?? "",
      auth: req.headers.authorization,
      contentType,
      fields,
      fileName,
      fileType,
      file,
    };
    stub.received.push(request);
    const answer = stub.answer(stub.received.length - 1, request);
    if (answer === "hang") {
      hanging.push(res);
      return;
    }
    res.statusCode = answer.status;
    res.setHeader("content-type", "application/json");
    res.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  stub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/audio/transcriptions`;
  return stub;
}

/** The samples of a RIFF/WAVE PCM 16-bit mono file (throws when it is not one). */
export function wavSamples(wav: Buffer): { sampleRate: number; channels: number; samples: Int16Array } {
  if (wav.toString("ascii", 0, 4) !== "RIFF" || wav.toString("ascii", 8, 12) !== "WAVE") {
    throw new Error("not a RIFF/WAVE file");
  }
  if (wav.readUInt16LE(20) !== 1 || wav.readUInt16LE(34) !== 16) throw new Error("not 16-bit PCM");
  const at = wav.indexOf("data", 12);
  const length = wav.readUInt32LE(at + 4);
  const data = wav.subarray(at + 8, at + 8 + length);
  return {
    sampleRate: wav.readUInt32LE(24),
    channels: wav.readUInt16LE(22),
    samples: new Int16Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)),
  };
}
