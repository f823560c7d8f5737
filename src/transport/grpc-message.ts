/**
 * `grpc-message` as the gRPC spec encodes it, so that every gRPC client reads
 * the same message.
 *
 * The spec (PROTOCOL-HTTP2.md) percent-encodes only `%` and bytes outside
 * printable ASCII. connect-es writes `encodeURIComponent(message)`, which
 * also encodes `:`, `$`, `/`, `,`, `?` and the like; decoders that follow the
 * spec undo that, but @grpc/grpc-js decodes with `decodeURI`, which leaves
 * reserved characters encoded: `country_code: ...` arrived as
 * `country_code%3A ...`. Re-encoding the trailer the spec's way reads the
 * same in grpc-js, grpc-go, grpc-java and Connect clients.
 *
 * Only responses to gRPC requests (`application/grpc`, not gRPC-Web, whose
 * status travels in the body) are touched: one header test per request.
 */
import type { NodeHandlerFn, NodeServerResponse } from "./types.js";

const SPEC_SAFE = /^[\x20-\x24\x26-\x7e]*$/;

/** Percent-encodes `message` per the gRPC spec: `%` and bytes outside 0x20-0x7E. */
export function encodeGrpcMessage(message: string): string {
  if (SPEC_SAFE.test(message)) return spaceSafe(message);
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return spaceSafe(out);
}

/**
 * HTTP/2 field values may not begin or end with whitespace (RFC 9113
 * 8.2.1): a message such as `unknown service  ` lost its whole grpc-message
 * on the way. Those spaces are percent-encoded, which every decoder undoes.
 */
function spaceSafe(value: string): string {
  if (!value.startsWith(" ") && !value.endsWith(" ")) return value;
  return value.replace(/^ +| +$/g, (spaces) => "%20".repeat(spaces.length));
}

function reencode(value: string): string {
  try {
    return encodeGrpcMessage(decodeURIComponent(value));
  } catch {
    return value;
  }
}

type Trailers = Parameters<NodeServerResponse["addTrailers"]>[0];

export function withGrpcMessageEncoding(handler: NodeHandlerFn): NodeHandlerFn {
  return (req, res) => {
    const contentType = req.headers["content-type"];
    if (contentType?.startsWith("application/grpc") && !contentType.startsWith("application/grpc-web")) {
      // connect-node writes the gRPC status with one addTrailers() call.
      const r = res as { addTrailers(trailers: Trailers): void };
      const addTrailers = r.addTrailers;
      r.addTrailers = (trailers: Trailers) => {
        const t = trailers as Record<string, unknown>;
        const message = t["grpc-message"];
        if (typeof message === "string") t["grpc-message"] = reencode(message);
        addTrailers.call(res, trailers);
      };
    }
    handler(req, res);
  };
}
