/**
 * Commands for the SIP edge's data: a SIP domain's users (the public API's
 * switchboard.voice.v1.SipUsers, which the operator token may use on every
 * project) and the operator's carrier trunks (admin API).
 *
 * Passwords are given with --password; they are never printed (the API
 * never returns them). Mind the shell history.
 */
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import {
  ListSipTrunksResponseSchema,
  SipTrunk_TransportSchema,
  SipTrunkSchema,
  SipTrunks,
} from "../../gen/switchboard/admin/v1/sip_trunks_pb.js";
import {
  ListSipUsersResponseSchema,
  SipUserSchema,
  SipUsers,
} from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import {
  bool,
  childName,
  done,
  enumNames,
  enumValue,
  flag,
  int,
  LIST_OPTIONS,
  listPages,
  PROJECT_OPTION,
  resource,
  str,
  strs,
} from "./args.js";
import { type Command, type OptionSpec, UsageError, type Values } from "./command.js";
import { col, idCol } from "./output.js";

const domainName = (arg: string, values: Values) => childName(arg, "sipDomains", values);

const USER_NAME = /^projects\/[^/]+\/sipDomains\/[^/]+\/users\/[^/]+$/;

/** A user: its full name, or its id with --project and --domain. */
function userName(arg: string, values: Values, command: string): string {
  if (arg.startsWith("projects/")) {
    if (!USER_NAME.test(arg)) {
      throw new UsageError(
        `expected projects/<project>/sipDomains/<domain>/users/<id>, got ${JSON.stringify(arg)}`,
        command,
      );
    }
    return arg;
  }
  const domain = str(values, "domain");
  if (!domain) {
    throw new UsageError("give the full name projects/<p>/sipDomains/<d>/users/<id>, or --domain", command);
  }
  return `${domainName(domain, values)}/users/${arg}`;
}

const USER_OPTIONS: Record<string, OptionSpec> = {
  ...PROJECT_OPTION,
  domain: { type: "string", value: "DOMAIN", description: "the SIP domain, when the user is given by id" },
};

const USER_SETTINGS: Record<string, OptionSpec> = {
  username: { type: "string", value: "NAME", description: "the SIP authentication username" },
  password: {
    type: "string",
    value: "PASSWORD",
    description: "the password (8 to 128 characters; never shown)",
  },
  "display-name": { type: "string", value: "TEXT", description: "a name for people" },
};

const USER_COLUMNS = [
  idCol("USER"),
  col("USERNAME", "username"),
  col("DISPLAY NAME", "displayName"),
  col("DISABLED", "disabled"),
  col("REALM", "realm"),
  col("CREATED", "createTime"),
];

const sipUsers: Command[] = [
  {
    path: ["sip-users", "list"],
    summary: "List a SIP domain's users, newest first",
    args: ["<domain>"],
    options: { ...PROJECT_OPTION, ...LIST_OPTIONS },
    examples: [
      "switchboard sip-users list acme-office --project acme",
      "switchboard sip-users list projects/acme/sipDomains/acme-office",
    ],
    run: ({ args, values, client }) =>
      listPages(
        ListSipUsersResponseSchema,
        "sipUsers",
        values,
        (pageSize, pageToken) =>
          client.of(SipUsers).listSipUsers({ parent: domainName(args[0]!, values), pageSize, pageToken }),
        USER_COLUMNS,
      ),
  },
  {
    path: ["sip-users", "get"],
    summary: "Show a SIP user",
    args: ["<user>"],
    options: USER_OPTIONS,
    examples: ["switchboard sip-users get alice --project acme --domain acme-office"],
    run: async ({ args, values, client }) =>
      resource(
        SipUserSchema,
        await client.of(SipUsers).getSipUser({ name: userName(args[0]!, values, "sip-users get") }),
      ),
  },
  {
    path: ["sip-users", "create"],
    summary: "Create a user of a SIP domain (its password is stored only as digest hashes)",
    args: ["<domain>", "<user-id>"],
    options: {
      ...PROJECT_OPTION,
      ...USER_SETTINGS,
      disabled: { type: "boolean", description: "create the user disabled" },
    },
    examples: [
      "switchboard sip-users create acme-office alice --project acme --username alice --password 'correct horse battery'",
    ],
    async run({ args, values, client }) {
      const user = await client.of(SipUsers).createSipUser({
        parent: domainName(args[0]!, values),
        sipUserId: args[1]!,
        sipUser: {
          username: str(values, "username") ?? "",
          password: str(values, "password") ?? "",
          displayName: str(values, "display-name") ?? "",
          disabled: flag(values, "disabled"),
        },
      });
      return resource(SipUserSchema, user);
    },
  },
  {
    path: ["sip-users", "update"],
    summary: "Change a SIP user: username (with --password), password, display name, disabled",
    args: ["<user>"],
    options: {
      ...USER_OPTIONS,
      ...USER_SETTINGS,
      disabled: { type: "string", value: "true|false", description: "disable or enable the user" },
    },
    examples: [
      "switchboard sip-users update alice --project acme --domain acme-office --password 'new password here'",
      "switchboard sip-users update projects/acme/sipDomains/acme-office/users/alice --disabled true",
    ],
    async run({ args, values, client }) {
      const paths: string[] = [];
      const sipUser: Record<string, unknown> = { name: userName(args[0]!, values, "sip-users update") };
      const set = (path: string, key: string, value: unknown) => {
        if (value === undefined) return;
        paths.push(path);
        sipUser[key] = value;
      };
      set("username", "username", str(values, "username"));
      set("password", "password", str(values, "password"));
      set("display_name", "displayName", str(values, "display-name"));
      set("disabled", "disabled", bool(values, "disabled"));
      if (paths.length === 0) throw new UsageError("nothing to change", "sip-users update");
      const user = await client.of(SipUsers).updateSipUser({ sipUser, updateMask: { paths } });
      return resource(SipUserSchema, user);
    },
  },
  {
    path: ["sip-users", "delete"],
    summary: "Delete a SIP user and its registrations",
    args: ["<user>"],
    options: USER_OPTIONS,
    examples: ["switchboard sip-users delete alice --project acme --domain acme-office"],
    async run({ args, values, client }) {
      const name = userName(args[0]!, values, "sip-users delete");
      return done(EmptySchema, await client.of(SipUsers).deleteSipUser({ name }), `deleted ${name}`);
    },
  },
];

const trunkName = (arg: string) => (arg.startsWith("sipTrunks/") ? arg : `sipTrunks/${arg}`);

const TRUNK_SETTINGS: Record<string, OptionSpec> = {
  address: { type: "string", value: "HOST[:PORT]", description: "where the trunk takes calls" },
  transport: {
    type: "string",
    value: "UDP|TCP|TLS",
    description: "the SIP transport towards the trunk (default UDP)",
  },
  username: { type: "string", value: "NAME", description: "digest username towards the trunk" },
  password: {
    type: "string",
    value: "PASSWORD",
    description: "digest password towards the trunk (never shown)",
  },
  network: {
    type: "string",
    multiple: true,
    value: "CIDR",
    description: "an IPv4 network the trunk sends calls from (repeatable; replaces the list)",
  },
  priority: { type: "string", value: "N", description: "0 to 65535, lower first" },
  "display-name": { type: "string", value: "TEXT", description: "a name for people" },
};

/** The trunk fields given as options, and their update mask paths. */
function trunkFields(values: Values, enabled: boolean | undefined) {
  const paths: string[] = [];
  const trunk: Record<string, unknown> = {};
  const set = (path: string, key: string, value: unknown) => {
    if (value === undefined) return;
    paths.push(path);
    trunk[key] = value;
  };
  set("address", "address", str(values, "address"));
  const transport = str(values, "transport");
  set(
    "transport",
    "transport",
    transport === undefined ? undefined : enumValue(SipTrunk_TransportSchema, transport, "--transport"),
  );
  set("username", "username", str(values, "username"));
  set("password", "password", str(values, "password"));
  const networks = strs(values, "network");
  set("inbound_networks", "inboundNetworks", networks.length > 0 ? networks : undefined);
  set("priority", "priority", int(values, "priority", 0, 65535));
  set("display_name", "displayName", str(values, "display-name"));
  set("enabled", "enabled", enabled);
  return { trunk, paths };
}

const TRUNK_COLUMNS = [
  idCol("TRUNK"),
  col("ADDRESS", "address"),
  col("TRANSPORT", "transport"),
  col("ENABLED", "enabled"),
  col("PRIORITY", "priority"),
  col("USERNAME", "username"),
  col("NETWORKS", "inboundNetworks"),
];

const trunks: Command[] = [
  {
    path: ["trunks", "list"],
    summary: "List carrier trunks, newest first",
    options: LIST_OPTIONS,
    examples: ["switchboard trunks list"],
    run: ({ values, client }) =>
      listPages(
        ListSipTrunksResponseSchema,
        "sipTrunks",
        values,
        (pageSize, pageToken) => client.of(SipTrunks).listSipTrunks({ pageSize, pageToken }),
        TRUNK_COLUMNS,
      ),
  },
  {
    path: ["trunks", "get"],
    summary: "Show a carrier trunk",
    args: ["<trunk>"],
    examples: ["switchboard trunks get carrier-a"],
    run: async ({ args, client }) =>
      resource(SipTrunkSchema, await client.of(SipTrunks).getSipTrunk({ name: trunkName(args[0]!) })),
  },
  {
    path: ["trunks", "create"],
    summary: "Add a carrier trunk (enabled unless --disabled)",
    args: ["<trunk-id>"],
    options: { ...TRUNK_SETTINGS, disabled: { type: "boolean", description: "add it disabled" } },
    description: `Transports: ${enumNames(SipTrunk_TransportSchema).join(", ")}.`,
    examples: [
      "switchboard trunks create carrier-a --address sip.carrier.example:5061 --transport TLS --username acct-42 --password 'trunk secret' --network 203.0.113.0/24 --priority 10",
    ],
    async run({ args, values, client }) {
      const { trunk } = trunkFields(values, !flag(values, "disabled"));
      const created = await client.of(SipTrunks).createSipTrunk({ sipTrunkId: args[0]!, sipTrunk: trunk });
      return resource(SipTrunkSchema, created);
    },
  },
  {
    path: ["trunks", "update"],
    summary: "Change a carrier trunk; only the options given change",
    args: ["<trunk>"],
    options: {
      ...TRUNK_SETTINGS,
      enabled: { type: "string", value: "true|false", description: "take calls through it or not" },
      "clear-password": { type: "boolean", description: "remove the stored password" },
    },
    examples: [
      "switchboard trunks update carrier-a --enabled false",
      "switchboard trunks update carrier-a --password 'new trunk secret'",
    ],
    async run({ args, values, client }) {
      const { trunk, paths } = trunkFields(values, bool(values, "enabled"));
      if (flag(values, "clear-password")) {
        if (paths.includes("password")) {
          throw new UsageError("give --password or --clear-password, not both", "trunks update");
        }
        paths.push("password");
      }
      if (paths.length === 0) throw new UsageError("nothing to change", "trunks update");
      const updated = await client.of(SipTrunks).updateSipTrunk({
        sipTrunk: { ...trunk, name: trunkName(args[0]!) },
        updateMask: { paths },
      });
      return resource(SipTrunkSchema, updated);
    },
  },
  {
    path: ["trunks", "delete"],
    summary: "Delete a carrier trunk (calls in progress through it go on)",
    args: ["<trunk>"],
    examples: ["switchboard trunks delete carrier-a"],
    async run({ args, client }) {
      const name = trunkName(args[0]!);
      return done(EmptySchema, await client.of(SipTrunks).deleteSipTrunk({ name }), `deleted ${name}`);
    },
  },
];

export const sipCommands: Command[] = [...sipUsers, ...trunks];
