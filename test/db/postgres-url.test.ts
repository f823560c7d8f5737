/**
 * DATABASE_URL's `host` query parameter naming a Unix-domain socket's
 * directory, as libpq reads it (src/db/postgres-url.ts): taken out of the
 * URL and given to postgres.js as its host, everything else left as it was;
 * and, on PostgreSQL, a database opened through the socket (the service's
 * pools and its migration) with the URL's other parameters still applied.
 */
import { existsSync } from "node:fs";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgres } from "../../src/db/client.js";
import { postgresArgs, socketHostOf } from "../../src/db/postgres-url.js";
import { createScratchDatabase, describePostgres } from "../support/db.js";

describe("DATABASE_URL's host parameter (a socket directory)", () => {
  it.each([
    [
      "postgres://u@localhost/db?host=/var/run/postgresql",
      "postgres://u@localhost/db",
      "/var/run/postgresql",
    ],
    ["postgres://u@localhost/db?host=%2Ftmp%2Fpg%20sockets", "postgres://u@localhost/db", "/tmp/pg sockets"],
    [
      "postgres://u@localhost:5433/db?sslmode=disable&host=/run/pg&application_name=sb",
      "postgres://u@localhost:5433/db?sslmode=disable&application_name=sb",
      "/run/pg",
    ],
    ["postgres://a:5432,b:5432/db?host=/run/pg", "postgres://a:5432,b:5432/db", "/run/pg"],
  ])("%s connects through the socket", (url, rest, dir) => {
    expect(socketHostOf(url)).toEqual({ url: rest, socketDir: dir });
    expect(postgresArgs(url, { max: 1 })).toEqual([rest, { max: 1, host: dir }]);
  });

  it.each([
    "postgres://u@localhost/db",
    "postgres://u@localhost/db?application_name=sb",
    "postgres://u@localhost/db?host=db.example.com",
    "postgres://u@localhost/db?host",
    "postgres://u@localhost/db?ghost=/x",
    "postgres://u@localhost/db?host=%2",
  ])("%s is left as it is", (url) => {
    expect(socketHostOf(url)).toEqual({ url, socketDir: undefined });
    const options = { max: 1 };
    expect(postgresArgs(url, options)).toEqual([url, options]);
  });
});

describePostgres("a database opened through a Unix-domain socket (PostgreSQL)", () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let socketDir: string | undefined;
  let port = 5432;
  beforeAll(async () => {
    const admin = postgres(process.env.TEST_DATABASE_URL!, { max: 1, onnotice: () => {} });
    try {
      const [row] = await admin`select current_setting('unix_socket_directories') as dirs,
        current_setting('port')::int as port`;
      port = row!.port as number;
      socketDir = String(row!.dirs)
        .split(",")
        .map((d) => d.trim())
        .find((d) => d.startsWith("/") && existsSync(`${d}/.s.PGSQL.${port}`));
    } finally {
      await admin.end();
    }
    scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
  });
  afterAll(async () => {
    await scratch?.drop();
  });

  it("migrates and answers over the socket, with the URL's other parameters applied", async (ctx) => {
    // The server's own setting names where its socket is; a server without one (or a
    // machine where its file is missing) has nothing to connect to here.
    if (socketDir === undefined) ctx.skip("the PostgreSQL server has no Unix-domain socket on this machine");
    const url = new URL(scratch.url);
    const viaSocket = `postgres://${url.username}@localhost:${port}${url.pathname}?application_name=sb-socket&host=${encodeURIComponent(socketDir!)}`;
    const database = openPostgres(viaSocket);
    try {
      await database.migrate();
      const [row] = (await database.db.execute(
        sql`select inet_server_addr() as addr, current_setting('application_name') as app,
          (select count(*) from drizzle.__drizzle_migrations)::int as migrations`,
      )) as unknown as Array<{ addr: string | null; app: string; migrations: number }>;
      // No server address: the session came in over the socket, not TCP.
      expect(row).toMatchObject({ addr: null, app: "sb-socket" });
      expect(row!.migrations).toBeGreaterThan(0);
    } finally {
      await database.close();
    }
  });
});
