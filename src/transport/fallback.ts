/**
 * What the one port serves besides Connect RPC paths: the Connect adapter
 * hands every request it has no procedure for to its `fallback`, which here
 * is a chain. Each link looks at the request and either answers it (returns
 * true) or declines (returns false) without touching the response; the first
 * link that answers wins, and a request nobody answers gets 404.
 */
import type { NodeHandlerFn, NodeServerRequest, NodeServerResponse } from "./types.js";

export type Fallback = (req: NodeServerRequest, res: NodeServerResponse) => boolean | Promise<boolean>;

export interface FallbackChainOptions {
  /** Called when a link throws; the request gets a bare 500 (or is cut if already answering). */
  onError?: (err: unknown, req: NodeServerRequest) => void;
}

export function chainFallbacks(
  links: readonly Fallback[],
  options: FallbackChainOptions = {},
): NodeHandlerFn {
  const fail = (err: unknown, req: NodeServerRequest, res: NodeServerResponse) => {
    options.onError?.(err, req);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(500, { "Content-Type": "application/json" });
    res.end('{"error":{"code":500,"message":"internal error","status":"INTERNAL"}}');
  };
  const notFound = (res: NodeServerResponse) => {
    res.writeHead(404, { "Content-Type": "application/json" });
    res.end('{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}');
  };
  const run = (i: number, req: NodeServerRequest, res: NodeServerResponse): void => {
    for (; i < links.length; i++) {
      let answered: boolean | Promise<boolean>;
      try {
        answered = links[i]!(req, res);
      } catch (err) {
        fail(err, req, res);
        return;
      }
      if (answered === true) return;
      if (answered !== false) {
        const next = i + 1;
        answered.then(
          (done) => {
            if (!done) run(next, req, res);
          },
          (err: unknown) => fail(err, req, res),
        );
        return;
      }
    }
    notFound(res);
  };
  return (req, res) => run(0, req, res);
}
