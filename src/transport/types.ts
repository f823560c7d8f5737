/**
 * The Node request handler shape shared by http and http2 (connect-node's
 * `NodeHandlerFn`, which its package index does not export).
 */
import type { connectNodeAdapter } from "@connectrpc/connect-node";

export type NodeHandlerFn = ReturnType<typeof connectNodeAdapter>;
export type NodeServerRequest = Parameters<NodeHandlerFn>[0];
export type NodeServerResponse = Parameters<NodeHandlerFn>[1];
