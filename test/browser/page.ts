/**
 * The browser side of connect-web.test.ts: bundled with esbuild and served
 * to headless Chromium. It talks to the API with @connectrpc/connect-web and
 * the generated client code, exactly as a web app would, and exposes
 * `globalThis.switchboard.run()` for page.evaluate().
 *
 * Runs in the browser only; the test imports its types, never its code.
 */
import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";

export type Protocol = "connect" | "grpcweb";

export interface RunInput {
  baseUrl: string;
  token: string;
  protocol: Protocol;
  /** `projects/{id}` */
  parent: string;
  /** A valid +E.164 number to unsubscribe. */
  phone: string;
}

/** A failed call, as seen by the page. */
export interface CallError {
  /** The Code name, e.g. `InvalidArgument`. */
  code: string;
  message: string;
  /** ErrorInfo reason, when the details arrived. */
  reason: string | undefined;
  /** BadRequest field violations, when the details arrived. */
  fields: string[];
}

export type RunResult =
  | {
      ok: true;
      created: { name: string; phone: string; labels: Record<string, string> };
      listed: string[];
      got: { name: string; phone: string; labels: Record<string, string> };
      invalid: CallError | undefined;
    }
  | { ok: false; error: CallError };

function describeError(err: unknown): CallError {
  const ce = ConnectError.from(err);
  return {
    code: Code[ce.code],
    message: ce.message,
    reason: ce.findDetails(ErrorInfoSchema)[0]?.reason,
    fields: ce.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations.map((v) => v.field)),
  };
}

function createUnsubscribersClient(input: RunInput): Client<typeof Unsubscribers> {
  const auth: Interceptor = (next) => (req) => {
    req.header.set("Authorization", `Bearer ${input.token}`);
    return next(req);
  };
  const transport =
    input.protocol === "connect"
      ? createConnectTransport({ baseUrl: input.baseUrl, useBinaryFormat: false, interceptors: [auth] })
      : createGrpcWebTransport({ baseUrl: input.baseUrl, interceptors: [auth] });
  return createClient(Unsubscribers, transport);
}

/** Create, list, get, then one invalid create; stops at the first unexpected failure. */
async function run(input: RunInput): Promise<RunResult> {
  const client = createUnsubscribersClient(input);
  try {
    const created = await client.createUnsubscriber({
      parent: input.parent,
      unsubscriber: { phone: input.phone, labels: { via: input.protocol } },
    });
    const list = await client.listUnsubscribers({ parent: input.parent, pageSize: 100 });
    const got = await client.getUnsubscriber({ name: created.name });
    let invalid: CallError | undefined;
    try {
      await client.createUnsubscriber({ parent: input.parent, unsubscriber: { phone: "x" } });
    } catch (err) {
      invalid = describeError(err);
    }
    return {
      ok: true,
      created: { name: created.name, phone: created.phone, labels: { ...created.labels } },
      listed: list.unsubscribers.map((u) => u.name),
      got: { name: got.name, phone: got.phone, labels: { ...got.labels } },
      invalid,
    };
  } catch (err) {
    return { ok: false, error: describeError(err) };
  }
}

export interface PageApi {
  run(input: RunInput): Promise<RunResult>;
}

(globalThis as { switchboard?: PageApi }).switchboard = { run };
