/**
 * Outgoing messages survive a restart: a process stopped with messages
 * QUEUED or SENT leaves them in the database, and the next process started
 * on it (build() -> resume) takes them over from where they were — a SENT
 * message is delivered when its route says, counted from its send time —
 * each status posted exactly once, in order, to a real receiver. Both
 * databases; a listening server and Connect clients; ManualSchedulers on
 * one TestClock (no sleeping for message time).
 */
import { fromJsonString } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { Message_Status, MessageSchema, Messages } from "../../gen/enfonica/messaging/v1/messages_pb.js";
import { SimulatorAdmin } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { type App, build } from "../../src/server.js";
import { addBlock, blockAllocator, Capability, numberingClients, provision } from "../numbering/support.js";
import { bearer, createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { sleep, T0 } from "../support/calls.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { startReceiver } from "../support/receiver.js";
import { ManualScheduler } from "../support/scheduler.js";

describe.each(testDatabases())("outgoing messages across a restart on $name", (backend) => {
  const database = useTestDatabase(backend);

  it("takes over messages a stopped process left QUEUED or SENT, posting each status once", async () => {
    const clock = new TestClock(T0);
    const receiver = await startReceiver();
    const config = testConfig({
      WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
      WEBHOOKS_POLL_INTERVAL_MS: "20",
    });
    const start = async (scheduler: ManualScheduler) => {
      const app = await build({ db: database.db, clock, scheduler, config });
      const address = await app.listen(0, "127.0.0.1");
      const transport = createConnectTransport({
        baseUrl: `http://127.0.0.1:${address.port}`,
        httpVersion: "1.1",
        interceptors: [bearer(TEST_OPERATOR_TOKEN)],
      });
      return { app, messages: createClient(Messages, transport) };
    };
    let app: App | undefined;
    try {
      const project = await newProject(database.db);
      const c = numberingClients(database.db, clock);
      const from = await addBlock(c, blockAllocator()(), 10, { capabilities: [Capability.SMS] });
      await provision(c, project, from);
      const slow = "+61491570777";
      await createTestClient(SimulatorAdmin, database.db, clock).createRoute({
        route: { prefix: slow, messageDeliverSeconds: 100 },
      });
      const statusUpdateUrl = `${receiver.base}/status`;

      const first = new ManualScheduler(clock);
      const one = await start(first);
      app = one.app;
      const sent = await one.messages.createMessage({
        parent: project,
        message: { to: slow, from, body: "sent before the restart", statusUpdateUrl },
      });
      // Message time moves in small steps while real I/O (the database) settles.
      const until = async (
        scheduler: ManualScheduler,
        client: typeof one.messages,
        name: string,
        status: Message_Status,
        step: number,
      ) => {
        for (let i = 0; i < 400; i++) {
          if ((await client.getMessage({ name })).status === status) return;
          await scheduler.advance(step);
          await sleep(2);
        }
        throw new Error(`${name} never reached ${Message_Status[status]}`);
      };
      await until(first, one.messages, sent.name, Message_Status.SENT, 0);
      const queued = await one.messages.createMessage({
        parent: project,
        message: { to: "+61491570778", from, body: "queued before the restart", statusUpdateUrl },
      });
      await app.close();
      app = undefined;

      // A new process on the same database; the old one's timers are gone with it.
      const second = new ManualScheduler(clock);
      const two = await start(second);
      app = two.app;
      await until(second, two.messages, queued.name, Message_Status.DELIVERED, 0.5);
      const halfway = await two.messages.getMessage({ name: sent.name });
      expect(halfway.status).toBe(Message_Status.SENT);
      await until(second, two.messages, sent.name, Message_Status.DELIVERED, 1);
      const done = await two.messages.getMessage({ name: sent.name });
      // Delivered 100 s after it was sent, as its route says, though the process changed.
      const ms = (t: { seconds: bigint; nanos: number }) => Number(t.seconds) * 1000 + t.nanos / 1e6;
      expect(ms(done.deliverTime!) - ms(done.sendTime!)).toBe(100_000);

      const statusesOf = (name: string) =>
        receiver.requests
          .map((r) => fromJsonString(MessageSchema, r.body))
          .filter((m) => m.name === name)
          .map((m) => Message_Status[m.status]);
      for (let i = 0; i < 500 && receiver.requests.length < 8; i++) await sleep(10);
      await sleep(50);
      expect(statusesOf(sent.name)).toEqual(["QUEUED", "SENDING", "SENT", "DELIVERED"]);
      expect(statusesOf(queued.name)).toEqual(["QUEUED", "SENDING", "SENT", "DELIVERED"]);
    } finally {
      await app?.close();
      await receiver.close();
    }
  });
});
