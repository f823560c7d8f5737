/**
 * Compiled Switchboard replicas (dist/server.js, as `npm start` runs it) on
 * one PostgreSQL database, each in a process of its own with its API and
 * its SIP edge on 127.0.0.1 ports of its own; and Connect clients of the
 * API, authorised with the operator token.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { bearer } from "../../support/app.js";
import { freePort, launch, type Proc } from "../../support/process.js";

export const OPERATOR_TOKEN = "interop-operator-token-0123456789abcdef";
export const BASE_DOMAIN = "sip.switchboard.local";

export interface Replica extends Proc {
  /** `http://127.0.0.1:{port}`. */
  base: string;
  sipPort: number;
  /** Stops the process (SIGTERM) and waits for its exit code. */
  stop(): Promise<number | null>;
}

/** Starts the compiled server on `databaseUrl` (built beforehand: ensureBuilt). */
export async function startReplica(databaseUrl: string, env: NodeJS.ProcessEnv = {}): Promise<Replica> {
  const port = await freePort();
  const sipPort = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "sb-interop-replica-"));
  const proc = launch(process.execPath, ["dist/server.js"], {
    HOST: "127.0.0.1",
    PORT: String(port),
    SIP_PORT: String(sipPort),
    // SIPp 3.6 answers only the first challenge, and only MD5 (docs/configuration.md).
    SIP_DIGEST_ALGORITHMS: "MD5,SHA-256",
    LOG_LEVEL: "info",
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN,
    RECORDING_LINK_SECRET: "interop-recording-link-secret-0123456789",
    ...env,
  });
  const replica: Replica = {
    ...proc,
    base: `http://127.0.0.1:${port}`,
    sipPort,
    async stop() {
      if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill("SIGTERM");
      const code = await proc.exited;
      rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
  // Ready once the SIP edge logs that it listens (after the API does).
  const deadline = Date.now() + 90_000;
  while (!/"msg":"SIP listening"/.test(proc.output())) {
    if (proc.child.exitCode !== null)
      throw new Error(`replica exited (${proc.child.exitCode}):\n${proc.output()}`);
    if (Date.now() > deadline) {
      await replica.stop();
      throw new Error(`replica not listening for SIP after 90 s:\n${proc.output()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return replica;
}

/** A Connect client of a replica's API, as the operator. */
export function apiClient<S extends DescService>(service: S, replica: { base: string }): Client<S> {
  return createClient(
    service,
    createConnectTransport({
      baseUrl: replica.base,
      httpVersion: "1.1",
      interceptors: [bearer(OPERATOR_TOKEN)],
    }),
  );
}
