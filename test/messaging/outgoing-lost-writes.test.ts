/**
 * An outgoing message's status change whose reply from the database is lost
 * (it committed; the connection dropped) is made again: the repeat finds
 * the message changed and goes on, so the message is still delivered and
 * each status posted once. Before, the change failed, was logged, and the
 * message stayed SENDING until the next process start took it over.
 *
 * Real parts: the app (build()) on a loopback port, PostgreSQL behind a TCP
 * proxy that loses the reply to the COMMIT of the change it is told to
 * (test/support/pg-proxy.ts), a real receiver. PostgreSQL only.
 */
import { fromJsonString } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Message_Status, MessageSchema, Messages } from "../../gen/enfonica/messaging/v1/messages_pb.js";
import { type Database, openPostgres } from "../../src/db/client.js";
import { type App, build } from "../../src/server.js";
import { addBlock, blockAllocator, Capability, numberingClients, provision } from "../numbering/support.js";
import { bearer, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { sleep, T0 } from "../support/calls.js";
import { TestClock } from "../support/clock.js";
import { describePostgres, postgresTestBackend, useTestDatabase } from "../support/db.js";
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { ManualScheduler } from "../support/scheduler.js";

const postgresBackend = postgresTestBackend();

describePostgres("an outgoing message's change whose reply was lost", () => {
  const direct = useTestDatabase(postgresBackend!);
  const clock = new TestClock(T0);
  const scheduler = new ManualScheduler(clock);
  let proxy: PgProxy;
  let proxied: Database;
  let app: App;
  let receiver: Receiver;
  let messages: ReturnType<typeof createClient<typeof Messages>>;

  beforeAll(async () => {
    proxy = await startPgProxy(direct.url!);
    proxied = openPostgres(proxy.url);
    receiver = await startReceiver();
    app = await build({
      db: proxied.db,
      clock,
      scheduler,
      config: testConfig({ WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true", WEBHOOKS_POLL_INTERVAL_MS: "20" }),
    });
    const address = await app.listen(0, "127.0.0.1");
    messages = createClient(
      Messages,
      createConnectTransport({
        baseUrl: `http://127.0.0.1:${address.port}`,
        httpVersion: "1.1",
        interceptors: [bearer(TEST_OPERATOR_TOKEN)],
      }),
    );
  });
  afterAll(async () => {
    await app?.close();
    await proxied?.close();
    await proxy?.close();
    await receiver?.close();
  });

  it("is made again: the message is delivered, each status posted once", async () => {
    const project = await newProject(direct.db);
    const c = numberingClients(direct.db, clock);
    const from = await addBlock(c, blockAllocator()(), 10, { capabilities: [Capability.SMS] });
    await provision(c, project, from);
    const lostBefore = proxy.lost();
    // The SENDING change's status update (its body a bound parameter) commits; the COMMIT's reply is lost.
    proxy.loseReplyTo('"status":"SENDING"', { at: "COMMIT" });
    const sent = await messages.createMessage({
      parent: project,
      message: {
        to: "+61491570779",
        from,
        body: "through a blip",
        statusUpdateUrl: `${receiver.base}/status`,
      },
    });
    let status = sent.status;
    for (let i = 0; i < 400 && status !== Message_Status.DELIVERED; i++) {
      await scheduler.advance(0.5);
      await sleep(5);
      status = (await messages.getMessage({ name: sent.name })).status;
    }
    expect(proxy.lost()).toBe(lostBefore + 1);
    expect(Message_Status[status]).toBe("DELIVERED");
    for (let i = 0; i < 500 && receiver.requests.length < 4; i++) await sleep(10);
    await sleep(50);
    expect(
      receiver.requests.map((r) => Message_Status[fromJsonString(MessageSchema, r.body).status]),
    ).toEqual(["QUEUED", "SENDING", "SENT", "DELIVERED"]);
  });
});
