/**
 * Exactly once through kill -9: a real server process on PostgreSQL
 * (`node --import tsx src/server.ts`) with the test-only fault point
 * FAULT_KILL_AFTER_CREATE_COMMIT SIGKILLs itself right after a keyed
 * CreateCall committed, before replying; the client sees the connection
 * die. The retry with the same key, against a fresh process, gets the call
 * back (read back: its response was never stored) and the project still
 * has one call. Runs only when TEST_DATABASE_URL is set.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Database, openPostgres } from "../../src/db/client.js";
import { calls, idempotencyKeys } from "../../src/db/schema/index.js";
import { addBlock, numberingClients, provision } from "../numbering/support.js";
import { newApiKey, newProject, TEST_OPERATOR_TOKEN, TEST_RECORDING_LINK_SECRET } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { createScratchDatabase, describePostgres } from "../support/db.js";
import { repoRoot } from "../transport/helpers.js";

const adminUrl = process.env.TEST_DATABASE_URL;
const CREATE_CALL = "enfonica.voice.v1beta1.Calls/CreateCall";

interface Server {
  child: ChildProcess;
  base: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `src/main.ts` in a process of its own; resolves once it listens. */
async function startServer(env: Record<string, string>): Promise<Server> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      PORT: "0",
      SIP_PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      SWITCHBOARD_OPERATOR_TOKEN: TEST_OPERATOR_TOKEN,
      RECORDING_LINK_SECRET: TEST_RECORDING_LINK_SECRET,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  let stderr = "";
  child.stderr?.on("data", (d) => {
    stderr += String(d);
  });
  const base = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === "switchboard listening" && entry.url) resolve(entry.url);
      } catch {
        // not a log line
      }
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`server exited (${code ?? signal}) before listening: ${stderr}`)),
    );
  });
  return { child, base, exited };
}

describePostgres("idempotent CreateCall through kill -9 on postgres", () => {
  let scratch: { url: string; drop(): Promise<void> };
  let database: Database;
  let dataDir: string;
  let project: string;
  let secret: string;
  let from: string;
  const servers: Server[] = [];

  beforeAll(async () => {
    scratch = await createScratchDatabase(adminUrl!);
    database = openPostgres(scratch.url);
    await database.migrate();
    dataDir = await mkdtemp(join(tmpdir(), "switchboard-crash-"));
    project = await newProject(database.db);
    secret = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
    const c = numberingClients(database.db, new TestClock());
    from = await addBlock(c, "+61255501000", 10);
    await provision(c, project, from);
  }, 120_000);

  afterAll(async () => {
    for (const s of servers) {
      if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill("SIGKILL");
      await s.exited;
    }
    await database?.close();
    await scratch?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const callsOfProject = () =>
    database.db
      .select()
      .from(calls)
      .where(eq(calls.projectId, project.split("/")[1]!));

  function createCall(base: string, key: string) {
    return fetch(`${base}/v1beta1/${project}/calls`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${secret}`,
        "content-type": "application/json",
        "idempotency-key": key,
      },
      body: JSON.stringify({
        to: "+61491570110",
        from,
        // .invalid never resolves: the call fails quietly, which is fine here.
        options: { handlerUris: ["https://handler.invalid/call"] },
      }),
    });
  }

  it("creates the call once: the retry after the crash reads it back", async () => {
    const env = { DATABASE_URL: scratch.url, DATA_DIR: dataDir };
    const doomed = await startServer({ ...env, FAULT_KILL_AFTER_CREATE_COMMIT: CREATE_CALL });
    servers.push(doomed);
    const key = "crash-test-0001";
    // The response never comes: the process dies between commit and reply.
    await expect(createCall(doomed.base, key)).rejects.toThrow();
    expect(await doomed.exited).toEqual({ code: null, signal: "SIGKILL" });

    const committed = await callsOfProject();
    expect(committed).toHaveLength(1);
    const [recorded] = await database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, key));
    expect(recorded).toMatchObject({ method: CREATE_CALL, response: null });
    expect(recorded!.resourceName).toBe(`${project}/calls/${committed[0]!.id}`);

    const fresh = await startServer(env);
    servers.push(fresh);
    const retry = await createCall(fresh.base, key);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const call = (await retry.json()) as { name: string; from: string; createMethod: string };
    expect(call).toMatchObject({ name: recorded!.resourceName, from, createMethod: "API" });
    expect(await callsOfProject()).toHaveLength(1);

    // A new key is a new call.
    const other = await createCall(fresh.base, "crash-test-0002");
    expect(other.status).toBe(200);
    expect(await callsOfProject()).toHaveLength(2);
  }, 180_000);
});
