/**
 * Raw requests for the hardening tests: bodies no well-behaved client sends
 * (corrupt protobuf, oversize, compression bombs), over HTTP/1.1 and HTTP/2,
 * with what came back and how much of the body had been sent by then.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import { gzipSync } from "node:zlib";

export interface RawResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  trailers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** Bytes of the request body written before the response began. */
  sentBeforeResponse: number;
}

/** A gRPC / gRPC-Web envelope: flags, 4-byte big-endian length (declared), data. */
export function envelope(
  data: Uint8Array,
  options: { flags?: number; declaredLength?: number } = {},
): Buffer {
  const head = Buffer.alloc(5);
  head[0] = options.flags ?? 0;
  head.writeUInt32BE(options.declaredLength ?? data.length, 1);
  return Buffer.concat([head, data]);
}

/** `size` zero bytes, gzipped: a few kilobytes that expand to `size`. */
export function gzipBomb(size: number): Buffer {
  return gzipSync(Buffer.alloc(size), { level: 9 });
}

/** Bytes that are not a protobuf message: an unterminated varint. */
export const CORRUPT_PROTOBUF = Buffer.from([
  0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
]);

/**
 * The body is `head`, then zeros up to `total` bytes, written in 64 KiB
 * chunks while the server has not answered; stops writing once it has.
 */
export interface Body {
  head: Uint8Array;
  total: number;
}

const CHUNK = Buffer.alloc(64 * 1024);

/** An HTTP/1.1 request (Connect, gRPC-Web, REST). */
export function http1(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: Body,
): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    let sentBeforeResponse = 0;
    const req = http.request(
      url,
      { method, headers: { ...headers, "content-length": String(body.total) }, agent: false },
      (res) => {
        answered = true;
        sentBeforeResponse = sent;
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            trailers: res.trailers,
            body: Buffer.concat(chunks),
            sentBeforeResponse,
          });
          req.destroy();
        });
        res.on("error", reject);
      },
    );
    req.on("error", (err) => {
      if (!answered) reject(err);
    });
    const pump = () => {
      if (sent === 0) {
        req.write(body.head);
        sent = body.head.length;
      }
      while (!answered && sent < body.total) {
        const n = Math.min(CHUNK.length, body.total - sent);
        sent += n;
        if (!req.write(CHUNK.subarray(0, n))) {
          req.once("drain", pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    pump();
  });
}

/** An HTTP/2 request (gRPC). */
export function http2Request(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  body: Body,
): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    session.on("error", reject);
    const stream = session.request({ ":method": "POST", ":path": path, ...headers });
    let sent = 0;
    let answered = false;
    let sentBeforeResponse = 0;
    let status = 0;
    let responseHeaders: RawResult["headers"] = {};
    let trailers: RawResult["trailers"] = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      answered = true;
      sentBeforeResponse = sent;
      status = Number(h[":status"]);
      responseHeaders = h;
    });
    stream.on("trailers", (t) => {
      trailers = t;
    });
    stream.on("data", (c: Buffer) => chunks.push(c));
    let finished = false;
    const done = () => {
      if (finished) return;
      finished = true;
      resolve({
        status,
        headers: responseHeaders,
        trailers,
        body: Buffer.concat(chunks),
        sentBeforeResponse,
      });
      stream.destroy();
      session.destroy();
    };
    // The server may answer without reading the rest: its end is the end.
    stream.on("end", done);
    stream.on("close", done);
    stream.on("error", () => {});
    const pump = () => {
      if (sent === 0) {
        stream.write(body.head);
        sent = body.head.length;
      }
      while (!answered && !stream.destroyed && sent < body.total) {
        const n = Math.min(CHUNK.length, body.total - sent);
        sent += n;
        if (!stream.write(CHUNK.subarray(0, n))) {
          stream.once("drain", pump);
          return;
        }
      }
      if (!answered && !stream.destroyed) stream.end();
    };
    pump();
  });
}

/** The trailer frame of a gRPC-Web body, as a header map. */
export function grpcWebTrailer(body: Buffer): Record<string, string> {
  let i = 0;
  while (i + 5 <= body.length) {
    const flags = body[i]!;
    const length = body.readUInt32BE(i + 1);
    const data = body.subarray(i + 5, i + 5 + length);
    if (flags & 0x80) {
      const out: Record<string, string> = {};
      for (const line of data.toString("utf8").split("\r\n")) {
        const c = line.indexOf(":");
        if (c > 0) out[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
      }
      return out;
    }
    i += 5 + length;
  }
  return {};
}
