/**
 * A real S3-protocol server for tests: s3rver (an npm package serving the S3
 * REST API from a directory) on 127.0.0.1, with one bucket, and the
 * settings that point the service at it. It knows one credential,
 * S3RVER / S3RVER, and refuses any other access key id (403
 * InvalidAccessKeyId); it does not check signatures.
 *
 * `cutter` puts a TCP proxy in front of it that can drop connections in the
 * middle of a request (a store stopped mid-write).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";

export const S3_TEST_ACCESS_KEY = "S3RVER";

export interface TestS3 {
  /** `http://127.0.0.1:{port}` */
  endpoint: string;
  port: number;
  bucket: string;
  /** The service's settings for this bucket (BLOB_STORE=s3). */
  env(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** Stops the server (its files stay until `remove`). */
  stop(): Promise<void>;
  /** Stops it and removes its files. */
  remove(): Promise<void>;
}

export async function startS3(bucket = "recordings", port = 0): Promise<TestS3> {
  const directory = mkdtempSync(join(tmpdir(), "sb-s3rver-"));
  const server = new S3rver({
    address: "127.0.0.1",
    port,
    directory,
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const address = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${address.port}`;
  let running = true;
  const stop = async () => {
    if (!running) return;
    running = false;
    await server.close();
  };
  return {
    endpoint,
    port: address.port,
    bucket,
    env: (extra = {}) => ({
      BLOB_STORE: "s3",
      S3_ENDPOINT: endpoint,
      S3_REGION: "us-east-1",
      S3_BUCKET: bucket,
      S3_ACCESS_KEY_ID: S3_TEST_ACCESS_KEY,
      S3_SECRET_ACCESS_KEY: "S3RVER",
      S3_FORCE_PATH_STYLE: "true",
      ...extra,
    }),
    stop,
    async remove() {
      await stop();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

export interface Cutter {
  /** `http://127.0.0.1:{port}` of the proxy. */
  endpoint: string;
  /**
   * Drops the next `connections` connections (default 1) once their client
   * has sent more than `afterBytes` bytes: the request cut off in the middle.
   */
  cut(afterBytes: number, connections?: number): void;
  /** Connections dropped so far. */
  cuts(): number;
  close(): Promise<void>;
}

/** A TCP proxy on 127.0.0.1 to `port` that can cut requests off mid-way. */
export async function cutter(port: number): Promise<Cutter> {
  let plan: { afterBytes: number; left: number } | undefined;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", () => {
      sockets.delete(client);
      upstream.destroy();
    });
    upstream.on("close", () => {
      sockets.delete(upstream);
      client.destroy();
    });
    client.on("error", drop);
    upstream.on("error", drop);
    let sent = 0;
    let doomed = false;
    client.on("data", (chunk: Buffer) => {
      if (plan !== undefined && plan.left > 0 && !doomed) {
        doomed = true;
        plan.left--;
        sent = 0;
      }
      if (doomed && plan !== undefined && sent + chunk.length > plan.afterBytes) {
        upstream.write(chunk.subarray(0, Math.max(0, plan.afterBytes - sent)));
        cuts++;
        drop();
        return;
      }
      sent += chunk.length;
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => client.write(chunk));
    upstream.connect(port, "127.0.0.1");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    cut(afterBytes, connections = 1) {
      plan = { afterBytes, left: connections };
    },
    cuts: () => cuts,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
