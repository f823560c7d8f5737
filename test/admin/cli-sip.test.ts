/**
 * The `switchboard` CLI's sip-users and trunks commands against a real
 * listening server, on each test database: what they print, what they
 * change, and that no password is ever printed.
 */
import { describe, expect, it } from "vitest";
import { testDatabases } from "../support/db.js";
import { cliServer, failed, fieldsOf, rowsOf } from "./cli-support.js";

describe.each(testDatabases())("switchboard sip-users and trunks on $name", (backend) => {
  const { op, ok, json, rest } = cliServer(backend);

  it("creates, lists, shows, updates and deletes a SIP domain's users", async () => {
    await ok("projects", "create", "cli-sip");
    const domain = await rest("POST", "/v1beta1/projects/cli-sip/sipDomains?sipDomainId=cli-sip-office", {});
    const created = fieldsOf(
      await ok(
        ...["sip-users", "create", "cli-sip-office", "alice", "--project", "cli-sip"],
        ...["--username", "alice", "--password", "correct horse battery", "--display-name", "Alice"],
      ),
    );
    expect(created).toMatchObject({
      name: "projects/cli-sip/sipDomains/cli-sip-office/users/alice",
      username: "alice",
      displayName: "Alice",
      realm: domain.fqdn,
    });
    const [header, ...rows] = rowsOf(
      await ok("sip-users", "list", "projects/cli-sip/sipDomains/cli-sip-office"),
    );
    expect(header).toEqual(["USER", "USERNAME", "DISPLAY NAME", "DISABLED", "REALM", "CREATED"]);
    expect(rows.map((r) => r.slice(0, 4))).toEqual([["alice", "alice", "Alice", "false"]]);

    const updated = await json(
      ...["sip-users", "update", "alice", "--project", "cli-sip", "--domain", "cli-sip-office"],
      ...["--password", "another password", "--disabled", "true"],
    );
    expect(updated).toMatchObject({ username: "alice", disabled: true });
    expect(JSON.stringify(updated)).not.toContain("password");
    const shown = await ok("sip-users", "get", "projects/cli-sip/sipDomains/cli-sip-office/users/alice");
    expect(fieldsOf(shown).disabled).toBe("true");
    expect(shown).not.toContain("correct horse battery");

    expect(
      failed(
        await op("sip-users", "update", "alice", "--project", "cli-sip", "--domain", "cli-sip-office"),
        2,
      ),
    ).toMatch(/^error: nothing to change/);
    expect(failed(await op("sip-users", "get", "alice", "--project", "cli-sip"), 2)).toMatch(/--domain/);
    expect(
      failed(
        await op(
          ...["sip-users", "create", "cli-sip-office", "bob", "--project", "cli-sip"],
          ...["--username", "bob", "--password", "short"],
        ),
        1,
      ),
    ).toMatch(/^error: INVALID_ARGUMENT: .*sip_user\.password/);

    expect(await ok("sip-users", "delete", "projects/cli-sip/sipDomains/cli-sip-office/users/alice")).toBe(
      "deleted projects/cli-sip/sipDomains/cli-sip-office/users/alice",
    );
    expect(
      failed(await op("sip-users", "get", "projects/cli-sip/sipDomains/cli-sip-office/users/alice"), 1),
    ).toMatch(/^error: NOT_FOUND: /);
  });

  it("adds, lists, shows, changes and deletes carrier trunks", async () => {
    const created = await json(
      ...["trunks", "create", "cli-carrier", "--address", "sip.carrier.example:5061", "--transport", "tls"],
      ...["--username", "acct-42", "--password", "trunk secret", "--network", "203.0.113.0/24"],
      ...["--network", "198.51.100.7/32", "--priority", "10"],
    );
    expect(created).toEqual({
      name: "sipTrunks/cli-carrier",
      sipTrunkId: "cli-carrier",
      address: "sip.carrier.example:5061",
      transport: "TLS",
      username: "acct-42",
      passwordSet: true,
      inboundNetworks: ["203.0.113.0/24", "198.51.100.7/32"],
      enabled: true,
      priority: 10,
      createTime: created.createTime,
      updateTime: created.updateTime,
    });
    const [header, ...rows] = rowsOf(await ok("trunks", "list"));
    expect(header).toEqual(["TRUNK", "ADDRESS", "TRANSPORT", "ENABLED", "PRIORITY", "USERNAME", "NETWORKS"]);
    expect(rows).toContainEqual([
      "cli-carrier",
      "sip.carrier.example:5061",
      "TLS",
      "true",
      "10",
      "acct-42",
      "203.0.113.0/24,198.51.100.7/32",
    ]);
    const changed = await json("trunks", "update", "cli-carrier", "--enabled", "false", "--clear-password");
    // proto3 JSON leaves out false values.
    expect(changed).toMatchObject({ priority: 10, username: "acct-42" });
    expect([changed.enabled ?? false, changed.passwordSet ?? false]).toEqual([false, false]);
    expect(fieldsOf(await ok("trunks", "get", "sipTrunks/cli-carrier")).enabled).toBe("false");

    expect(failed(await op("trunks", "update", "cli-carrier"), 2)).toMatch(/^error: nothing to change/);
    expect(
      failed(await op("trunks", "create", "x", "--address", "a.example", "--transport", "sctp"), 2),
    ).toMatch(/--transport must be one of UDP, TCP, TLS/);
    expect(
      failed(await op("trunks", "create", "bad-net", "--address", "a.example", "--network", "10.0.0.1/8"), 1),
    ).toMatch(/^error: INVALID_ARGUMENT: /);
    expect(await ok("trunks", "delete", "cli-carrier")).toBe("deleted sipTrunks/cli-carrier");
    expect(failed(await op("trunks", "get", "cli-carrier"), 1)).toMatch(/^error: NOT_FOUND: /);
  });
});
