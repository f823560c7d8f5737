/**
 * What happens to the unread rest of an HTTP/1.1 request body when the
 * server answers early (a message over MAX_REQUEST_BYTES, a client error
 * found in the first bytes).
 *
 * connect-node reads request bodies with `for await`, and leaving that loop
 * destroys the request, which on HTTP/1.1 destroys the socket: the client,
 * still sending, gets ECONNRESET instead of the answer. Here the loop leaves
 * the request alone, and once the answer is sent the rest of the body is
 * discarded as it arrives (Node dumps unread bodies); a client that keeps
 * sending more than `maxBytes` after the answer has its connection closed.
 * HTTP/2 streams are independent and left as they are.
 */
import type { IncomingMessage } from "node:http";
import type { NodeHandlerFn } from "./types.js";

export function withEarlyAnswers(handler: NodeHandlerFn, maxBytes: number): NodeHandlerFn {
  return (req, res) => {
    if (req.httpVersionMajor < 2 && req.method !== "GET" && req.method !== "HEAD") {
      const r = req as IncomingMessage;
      r[Symbol.asyncIterator] = () => r.iterator({ destroyOnReturn: false });
      res.once("finish", () => {
        if (r.complete) return;
        let discarded = 0;
        r.on("data", (chunk: Buffer) => {
          discarded += chunk.length;
          if (discarded > maxBytes) r.socket.destroy();
        });
        r.resume();
      });
    }
    handler(req, res);
  };
}
