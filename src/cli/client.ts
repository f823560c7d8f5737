/**
 * The CLI's connection: one Connect-protocol transport (HTTP/1.1) to `--url`
 * with the operator token, and typed clients on it.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import {
  createClient,
  type Interceptor,
  type Client as ServiceClient,
  type Transport,
} from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { UsageError } from "./command.js";

export interface Client {
  /** The server's base URL. */
  readonly url: string;
  /** A client of `service` on the shared transport. */
  of<S extends DescService>(service: S): ServiceClient<S>;
}

/** The operator token: `--token`, else SWITCHBOARD_OPERATOR_TOKEN, else DATA_DIR/operator-token. */
export function operatorToken(explicit: string | undefined, env: NodeJS.ProcessEnv): string {
  if (explicit) return explicit;
  if (env.SWITCHBOARD_OPERATOR_TOKEN) return env.SWITCHBOARD_OPERATOR_TOKEN;
  const file = join(resolve(env.DATA_DIR || "./data"), "operator-token");
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    throw new UsageError(
      `no operator token: pass --token, set SWITCHBOARD_OPERATOR_TOKEN, or run where ${file} exists`,
    );
  }
}

/** A client for `url` sending `Authorization: Bearer <token>`; the transport is made on first use. */
export function connect(url: string, token: () => string): Client {
  let transport: Transport | undefined;
  const open = (): Transport => {
    if (transport) return transport;
    let baseUrl: URL;
    try {
      baseUrl = new URL(url);
    } catch {
      throw new UsageError(`invalid --url ${JSON.stringify(url)}`);
    }
    const secret = token();
    const auth: Interceptor = (next) => (req) => {
      req.header.set("authorization", `Bearer ${secret}`);
      return next(req);
    };
    transport = createConnectTransport({
      baseUrl: baseUrl.href.replace(/\/$/, ""),
      httpVersion: "1.1",
      interceptors: [auth],
    });
    return transport;
  };
  return {
    url,
    of: (service) => createClient(service, open()),
  };
}
