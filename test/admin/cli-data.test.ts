/**
 * The `switchboard` CLI's numbering, SIP domain, simulator, webhook, call,
 * message and recording commands against a real listening server, on each
 * test database.
 */
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { createRecordings } from "../../src/recordings/index.js";
import { testConfig } from "../support/app.js";
import { testDatabases } from "../support/db.js";
import { cliServer, failed, fieldsOf, rowsOf } from "./cli-support.js";

describe.each(testDatabases())("switchboard CLI data commands on $name", (backend) => {
  const { database, op, ok, json, rest } = cliServer(backend);

  it("adds inventory blocks, searches them, provisions a range, ports in, suspends, resumes; reviews a listing", async () => {
    await ok("projects", "create", "cli-numbers");
    const block = fieldsOf(
      await ok(
        ...["inventory", "add-block", "+61255509000", "--size", "20", "--type", "local"],
        ...["--capability", "VOICE", "--capability", "sms", "--country", "AU"],
      ),
    );
    expect(block).toMatchObject({
      startPhoneNumber: "+61255509000",
      endPhoneNumber: "+61255509019",
      size: "20",
      numberType: "LOCAL",
      capabilities: "SMS, VOICE",
      countryCode: "AU",
    });
    const found = await ok("inventory", "search", "--country", "AU", "--prefix", "+6125550901", "--voice");
    const [header, ...rows] = rowsOf(found);
    expect(header).toEqual(["NUMBER", "TYPE", "CAPABILITIES", "COUNTRY", "SKU"]);
    expect(rows[0]).toEqual(["+61255509010", "LOCAL", "SMS,VOICE", "AU", "AU-LOCAL-MONTHLY"]);
    expect(rows).toHaveLength(10);
    const page = await json(
      "inventory",
      "search",
      "--country",
      "AU",
      "--prefix",
      "+6125550901",
      "--limit",
      "3",
    );
    expect(page.phoneNumbers).toHaveLength(3);
    expect(page.nextPageToken).toBeTruthy();

    const range = await json("numbers", "provision-range", "cli-numbers", "+61255509000", "--size", "10");
    expect(range).toMatchObject({
      lifecycleState: "ACTIVE",
      range: { startPhoneNumber: "+61255509000", endPhoneNumber: "+61255509009", size: 10 },
    });
    const rangeId = (range.name as string).split("/")[3]!;
    const [listHeader, ...listRows] = rowsOf(await ok("numbers", "list", "cli-numbers"));
    expect(listHeader).toEqual([
      "INSTANCE",
      "NUMBER",
      "RANGE END",
      "STATE",
      "COMPLIANT",
      "DISPLAY NAME",
      "CREATED",
    ]);
    expect(listRows.map((r) => r.slice(0, 5))).toEqual([
      [rangeId, "+61255509000", "+61255509009", "ACTIVE", "false"],
    ]);
    expect(fieldsOf(await ok("numbers", "get", rangeId, "--project", "cli-numbers"))).toMatchObject({
      name: range.name,
      "phoneNumber.phoneNumber": "+61255509000",
      "range.size": "10",
    });
    expect((await json("numbers", "suspend", range.name)).lifecycleState).toBe("SUSPENDED");
    expect(fieldsOf(await ok("numbers", "resume", rangeId, "--project", "cli-numbers")).lifecycleState).toBe(
      "ACTIVE",
    );
    expect(
      failed(await op("numbers", "provision-range", "cli-numbers", "+61255509005", "--size", "2"), 1),
    ).toMatch(/^error: ALREADY_EXISTS: /);

    const ported = await json("numbers", "port-in", "cli-numbers", "+61298765432");
    expect(ported.lifecycleState).toBe("PENDING");
    expect(failed(await op("numbers", "suspend", ported.name), 1)).toMatch(/^error: FAILED_PRECONDITION: /);
    const completed = await json("numbers", "complete-port-in", ported.name);
    expect(completed.lifecycleState).toBe("ACTIVE");
    expect(completed.activateTime).toBeTruthy();
    expect(
      (await json("numbers", "list", "cli-numbers", "--prefix", "+612987")).phoneNumberInstances,
    ).toHaveLength(1);

    const listing = await rest("POST", "/v1beta1/projects/cli-numbers/regulatoryListings", {
      displayName: "Head office",
      business: { business: "Example Pty Ltd" },
      address: {
        addressLines: ["1 Example St"],
        locality: "Sydney",
        administrativeArea: "NSW",
        postalCode: "2000",
        regionCode: "AU",
      },
    });
    const listingId = (listing.name as string).split("/")[3]!;
    const listings = rowsOf(await ok("listings", "list", "cli-numbers"));
    expect(listings[0]).toEqual(["LISTING", "DISPLAY NAME", "REGION", "VALID", "VERIFIED", "CREATED"]);
    expect(listings.slice(1).map((r) => r.slice(0, 3))).toEqual([[listingId, "Head office", "AU"]]);
    const reviewed = fieldsOf(
      await ok("listings", "review", listingId, "--project", "cli-numbers", "--valid", "true"),
    );
    expect(reviewed).toMatchObject({ valid: "true", verified: "false" });
    expect(await json("listings", "review", listing.name, "--verified", "yes")).toMatchObject({
      valid: true,
      verified: true,
    });
    expect(fieldsOf(await ok("listings", "get", listing.name))["address.locality"]).toBe("Sydney");

    // attach a listing while provisioning: the instance is compliant at once
    await ok(
      "inventory",
      "add-block",
      "+61255509100",
      "--size",
      "5",
      "--type",
      "LOCAL",
      "--capability",
      "VOICE",
      "--country",
      "AU",
    );
    const attached = await json(
      ...["numbers", "provision-range", "projects/cli-numbers", "+61255509100", "--size", "5"],
      ...["--listing", listingId],
    );
    expect(attached).toMatchObject({ regulatoryListing: listing.name, compliant: true });
  });

  it("reads SIP domains and runs the operator's domain-optional and collaboration verification actions", async () => {
    await ok("projects", "create", "cli-sip");
    await rest("POST", "/v1beta1/projects/cli-sip/sipDomains?sipDomainId=cli-office", {
      displayName: "Office",
      callTerminationMode: "PROGRAMMABLE",
      callTerminationHandlerUris: ["https://app.example.com/voice"],
    });
    const [header, ...rows] = rowsOf(await ok("sip-domains", "list", "cli-sip"));
    expect(header).toEqual(["DOMAIN", "FQDN", "TYPE", "TERMINATION", "DOMAIN OPTIONAL", "DELETED"]);
    expect(rows[0]!.slice(0, 5)).toEqual([
      "cli-office",
      "cli-office.sip.switchboard.local",
      "DOMAIN_TYPE_STANDARD",
      "PROGRAMMABLE",
      "false",
    ]);
    const on = await json(
      "sip-domains",
      "domain-optional",
      "cli-office",
      "on",
      "--project",
      "cli-sip",
      "--cidr",
      "203.0.113.0/24",
    );
    expect(on).toMatchObject({ domainOptional: true, cidrBlocks: [{ cidrBlock: "203.0.113.0/24" }] });
    expect(fieldsOf(await ok("sip-domains", "get", "projects/cli-sip/sipDomains/cli-office"))).toMatchObject({
      domainOptional: "true",
      "cidrBlocks[0].cidrBlock": "203.0.113.0/24",
    });
    expect(
      failed(await op("sip-domains", "domain-optional", "projects/cli-sip/sipDomains/cli-office", "on"), 1),
    ).toMatch(/^error: (INVALID_ARGUMENT|FAILED_PRECONDITION): /);
    expect(
      fieldsOf(await ok("sip-domains", "domain-optional", "projects/cli-sip/sipDomains/cli-office", "OFF"))
        .domainOptional,
    ).toBe("false");

    await rest("POST", "/v1beta1/projects/cli-sip/sipDomains?sipDomainId=cli-teams", {
      type: "DOMAIN_TYPE_COLLAB_DIRECT_ROUTING",
    });
    const record = `collab-verification=${"w".repeat(43)}`;
    await rest("POST", "/v1beta1/projects/cli-sip/sipDomains/cli-teams:verifyCollabDirectRouting", {
      verificationString: record,
    });
    expect(
      fieldsOf(await ok("sip-domains", "collab-verification", "cli-teams", "--project", "cli-sip")),
    ).toMatchObject({
      sipDomain: "projects/cli-sip/sipDomains/cli-teams",
      verificationRecord: record,
      verified: "false",
      platformCheckPassed: "false",
    });
    const accepted = await json("sip-domains", "accept-collab", "projects/cli-sip/sipDomains/cli-teams");
    expect(accepted).toMatchObject({ verified: true });
    expect(failed(await op("sip-domains", "accept-collab", "cli-office", "--project", "cli-sip"), 1)).toMatch(
      /^error: FAILED_PRECONDITION: /,
    );
  });

  it("programs simulator routes, injects incoming calls and messages, and reads calls, messages, webhooks and recordings", async () => {
    const route = fieldsOf(
      await ok(
        ...["simulator", "routes", "create", "--prefix", "+6149157", "--outcome", "busy"],
        ...["--ring-seconds", "0", "--error-code", "SIP_486"],
      ),
    );
    expect(route).toMatchObject({
      prefix: "+6149157",
      outcome: "BUSY",
      ringSeconds: "0",
      errorCode: "SIP_486",
    });
    const routeId = route.name!.split("/")[2]!;
    const routes = rowsOf(await ok("simulator", "routes", "list"));
    expect(routes[0]).toEqual(["ROUTE", "PREFIX", "OUTCOME", "RING", "TALK", "AUDIO", "DIGITS", "ERROR"]);
    expect(routes.find((r) => r[0] === routeId)?.slice(0, 3)).toEqual([routeId, "+6149157", "BUSY"]);
    expect((await json("simulator", "routes", "get", routeId)).prefix).toBe("+6149157");
    expect(failed(await op("simulator", "routes", "create", "--prefix", "+6149157"), 1)).toMatch(
      /^error: ALREADY_EXISTS: /,
    );
    expect(await ok("simulator", "routes", "delete", route.name!)).toBe(`deleted ${route.name}`);
    expect(failed(await op("simulator", "routes", "get", routeId), 1)).toMatch(/^error: NOT_FOUND: /);
    expect(failed(await op("simulator", "routes", "create", "--outcome", "MAYBE"), 2)).toMatch(
      /^error: --outcome must be one of ANSWER, BUSY, REJECT, NO_ANSWER, FAIL/,
    );
    const messageRoute = await json(
      ...["simulator", "routes", "create", "--prefix", "+61491570666", "--message-outcome", "fail"],
      ...["--message-error-code", "30007", "--message-deliver-seconds", "3"],
    );
    expect(messageRoute).toMatchObject({
      prefix: "+61491570666",
      messageOutcome: "MESSAGE_FAIL",
      messageDeliverSeconds: 3,
      messageErrorCode: "30007",
    });
    await ok("simulator", "routes", "delete", String(messageRoute.name));
    expect(failed(await op("simulator", "routes", "create", "--message-outcome", "BOUNCE"), 2)).toMatch(
      /^error: --message-outcome must be one of MESSAGE_DELIVER, MESSAGE_FAIL, MESSAGE_UNDELIVERED/,
    );

    await ok("projects", "create", "cli-sim");
    await ok(
      "inventory",
      "add-block",
      "+61255509200",
      "--size",
      "1",
      "--type",
      "LOCAL",
      "--capability",
      "VOICE",
      "--capability",
      "SMS",
      "--country",
      "AU",
    );
    const instance = await json("numbers", "provision-range", "cli-sim", "+61255509200", "--size", "1");
    await rest(
      "PATCH",
      `/v1beta1/${instance.name}?updateMask=incomingMessageHandlerUris,incomingCallHandlerUris`,
      {
        incomingMessageHandlerUris: ["https://hooks.example.com/messages"],
        incomingCallHandlerUris: ["https://hooks.example.com/calls"],
      },
    );

    const message = fieldsOf(
      await ok("simulator", "incoming-message", "+61255509200", "--from", "+61491570156", "--body", "hello"),
    );
    expect(message).toMatchObject({
      direction: "INCOMING",
      status: "RECEIVED",
      body: "hello",
      from: "+61491570156",
    });
    const messages = rowsOf(await ok("messages", "list", "cli-sim"));
    expect(messages[0]).toEqual(["MESSAGE", "DIRECTION", "STATUS", "FROM", "TO", "BODY", "CREATED"]);
    expect(messages[1]!.slice(1, 6)).toEqual([
      "INCOMING",
      "RECEIVED",
      "+61491570156",
      "+61255509200",
      "hello",
    ]);
    expect((await json("messages", "get", message.name!)).body).toBe("hello");
    expect(
      failed(await op("simulator", "incoming-message", "+61255509299", "--from", "+61491570156"), 1),
    ).toMatch(/^error: FAILED_PRECONDITION: /);

    const deliveries = rowsOf(await ok("webhooks", "list", "cli-sim"));
    expect(deliveries[0]).toEqual([
      "DELIVERY",
      "EVENT",
      "STATE",
      "ROUNDS",
      "LAST ATTEMPT",
      "NEXT ATTEMPT",
      "CREATED",
    ]);
    expect(deliveries[1]!.slice(1, 3)).toEqual(["INCOMING_MESSAGE", "PENDING"]);
    const delivery = (await json("webhooks", "list", "projects/cli-sim")).webhookDeliveries[0];
    expect(delivery).toMatchObject({
      eventType: "INCOMING_MESSAGE",
      uris: ["https://hooks.example.com/messages"],
    });
    expect(JSON.parse(delivery.body)).toMatchObject({ body: "hello" });
    expect(failed(await op("webhooks", "list", "cli-nope"), 1)).toMatch(
      /^error: NOT_FOUND: projects\/cli-nope not found$/,
    );
    // The inspector: a filter, one delivery in full, redelivery (only of FAILED ones).
    const filtered = rowsOf(await ok("webhooks", "list", "cli-sim", "--filter", "event = RECORDING_READY"));
    expect(filtered).toHaveLength(1); // the header alone
    expect(
      rowsOf(await ok("webhooks", "list", "cli-sim", "--filter", "event = INCOMING_MESSAGE")).length,
    ).toBe(deliveries.length);
    expect(failed(await op("webhooks", "list", "cli-sim", "--filter", "colour = red"), 1)).toMatch(
      /^error: INVALID_ARGUMENT: /,
    );
    const shown = await ok("webhooks", "get", delivery.name);
    expect(shown).toMatch(/^eventType: +INCOMING_MESSAGE$/m);
    expect(shown).toMatch(new RegExp(`^webhookId: +${delivery.webhookId}$`, "m"));
    const id = delivery.name.split("/").at(-1);
    expect((await json("webhooks", "get", id, "--project", "cli-sim")).name).toBe(delivery.name);
    expect(failed(await op("webhooks", "redeliver", delivery.name), 1)).toMatch(
      /^error: FAILED_PRECONDITION: /,
    );
    expect(failed(await op("webhooks", "get", id), 2)).toMatch(/--project/);

    const injected = await ok("simulator", "incoming-call", "+61255509200", "--from", "+61491570156");
    const callName = /^call: (projects\/cli-sim\/calls\/\S+)$/.exec(injected)?.[1];
    expect(callName).toBeTruthy();
    const calls = rowsOf(await ok("calls", "list", "cli-sim", "--filter", "direction = INCOMING"));
    expect(calls[0]).toEqual(["CALL", "DIRECTION", "STATE", "FROM", "TO", "ERROR", "CREATED"]);
    expect(calls[1]!.slice(0, 2)).toEqual([callName!.split("/")[3], "INCOMING"]);
    expect(await json("calls", "get", callName!)).toMatchObject({
      name: callName,
      direction: "INCOMING",
      from: "+61491570156",
      to: "+61255509200",
    });
    expect(
      fieldsOf(await ok("calls", "get", callName!.split("/")[3]!, "--project", "cli-sim")).createMethod,
    ).toBe("INCOMING_CALL");
    expect(
      (await json("calls", "list", "cli-sim", "--filter", "direction = OUTGOING")).calls,
    ).toBeUndefined();
    expect(failed(await op("calls", "list", "cli-sim", "--filter", "colour = RED"), 1)).toMatch(
      /^error: INVALID_ARGUMENT: /,
    );

    // a recording of that call, made as the engine makes them
    const recordings = createRecordings({
      config: testConfig(),
      clock: { now: () => new Date() },
      log: createLogger("silent"),
      db: database.db,
    });
    const pending = await recordings.createPending({
      projectId: "cli-sim",
      callId: callName!.split("/")[3]!,
      source: "RECORD_ACTION",
      postProcessing: [],
      readyUri: "",
      channelCount: 1,
    });
    const recs = rowsOf(await ok("recordings", "list", "cli-sim"));
    expect(recs[0]).toEqual(["CALL", "RECORDING", "STATE", "SOURCE", "DURATION", "CREATED"]);
    expect(recs.slice(1).map((r) => r.slice(0, 4))).toEqual([
      [callName!.split("/")[3], pending.id, "PENDING", "RECORD_ACTION"],
    ]);
    expect((await json("recordings", "list", callName!)).recordings).toHaveLength(1);
    expect((await json("recordings", "list", "cli-sim", "--call", "other")).recordings).toBeUndefined();
    expect(
      fieldsOf(
        await ok("recordings", "get", pending.id, "--project", "cli-sim", "--call", callName!.split("/")[3]!),
      ),
    ).toMatchObject({
      name: pending.name,
      state: "PENDING",
    });
    expect((await json("recordings", "get", pending.name)).state).toBe("PENDING");
    expect(failed(await op("recordings", "get", `${callName}/recordings/nope`), 1)).toMatch(
      /^error: NOT_FOUND: /,
    );
  });
});
