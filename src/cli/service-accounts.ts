/**
 * Commands for service accounts, their bindings and keys, and getting an
 * access token with a key file (what the SDKs do, for curl and scripts).
 */
import { writeFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { type Binding, BindingSchema } from "../../gen/switchboard/admin/v1/api_keys_pb.js";
import {
  CreateServiceAccountKeyResponseSchema,
  ListServiceAccountKeysResponseSchema,
  ListServiceAccountsResponseSchema,
  ServiceAccountKeySchema,
  ServiceAccountSchema,
  ServiceAccounts,
} from "../../gen/switchboard/admin/v1/service_accounts_pb.js";
import { done, LIST_OPTIONS, listPages, projectName, resource, str, strs } from "./args.js";
import { type Command, type Invocation, type OptionSpec, UsageError, type Values } from "./command.js";
import { col, idCol, type Json } from "./output.js";
import { tokenCommands } from "./token.js";

const GROUP = "service-accounts";

const ROLES =
  "Roles: roles/owner, roles/viewer, roles/numbering.admin, roles/voice.admin,\n" +
  "roles/messaging.admin, roles/webhooks.verifier. Permissions are the names of the\n" +
  "interface document, e.g. voice.calls.get.";

function accountName(arg: string): string {
  return arg.startsWith("serviceAccounts/") ? arg : `serviceAccounts/${arg}`;
}

/** A key: its full name, or its id with the account as first argument. */
function keyName(account: string, key: string): string {
  return key.startsWith("serviceAccounts/") ? key : `${accountName(account)}/keys/${key}`;
}

const BINDING_OPTIONS: Record<string, OptionSpec> = {
  role: { type: "string", multiple: true, value: "ROLE", description: "a role to grant (repeatable)" },
  permission: {
    type: "string",
    multiple: true,
    value: "PERMISSION",
    description: "a permission to grant (repeatable)",
  },
};

function grants(values: Values, command: string): { roles: string[]; permissions: string[] } {
  const roles = strs(values, "role");
  const permissions = strs(values, "permission");
  if (roles.length === 0 && permissions.length === 0) {
    throw new UsageError("give at least one --role or --permission", command);
  }
  return { roles, permissions };
}

const accountColumns = [
  idCol("ACCOUNT"),
  col("EMAIL", "email"),
  col("DISABLED", "disabled"),
  { header: "PROJECTS", value: (a: Json) => (a.bindings as Json[]).map((b) => b.project) },
  col("CREATED", "createTime"),
];

const accounts: Command[] = [
  {
    path: [GROUP, "create"],
    summary: "Create a service account bound to projects",
    args: ["<account>"],
    options: {
      project: {
        type: "string",
        multiple: true,
        value: "PROJECT",
        description: "a project to bind (repeatable; each gets the same grants)",
      },
      ...BINDING_OPTIONS,
      "display-name": { type: "string", value: "NAME", description: "a name for people" },
    },
    description: ROLES,
    examples: [
      "switchboard service-accounts create billing-bot --project acme --role roles/voice.admin",
      'switchboard service-accounts create reporting --project acme --role roles/viewer --display-name "Reports"',
    ],
    async run({ args, values, client }) {
      const command = `${GROUP} create`;
      const projectIds = strs(values, "project");
      if (projectIds.length === 0) throw new UsageError("give at least one --project", command);
      const { roles, permissions } = grants(values, command);
      const account = await client.of(ServiceAccounts).createServiceAccount({
        serviceAccountId: args[0]!,
        serviceAccount: {
          displayName: str(values, "display-name") ?? "",
          bindings: projectIds.map((p) =>
            create(BindingSchema, { project: projectName(p), roles, permissions }),
          ),
        },
      });
      return resource(ServiceAccountSchema, account);
    },
  },
  {
    path: [GROUP, "list"],
    summary: "List service accounts, newest first",
    options: LIST_OPTIONS,
    examples: ["switchboard service-accounts list"],
    run: ({ values, client }) =>
      listPages(
        ListServiceAccountsResponseSchema,
        "serviceAccounts",
        values,
        (pageSize, pageToken) => client.of(ServiceAccounts).listServiceAccounts({ pageSize, pageToken }),
        accountColumns,
      ),
  },
  {
    path: [GROUP, "get"],
    summary: "Show a service account and its bindings",
    args: ["<account>"],
    examples: ["switchboard service-accounts get billing-bot"],
    run: async ({ args, client }) =>
      resource(
        ServiceAccountSchema,
        await client.of(ServiceAccounts).getServiceAccount({ name: accountName(args[0]!) }),
      ),
  },
  ...(["disable", "enable"] as const).map(
    (verb): Command => ({
      path: [GROUP, verb],
      summary:
        verb === "disable"
          ? "Disable a service account: its access tokens are refused at once, until enabled"
          : "Enable a disabled service account",
      args: ["<account>"],
      examples: [`switchboard service-accounts ${verb} billing-bot`],
      run: async ({ args, client }) =>
        resource(
          ServiceAccountSchema,
          await client.of(ServiceAccounts).updateServiceAccount({
            serviceAccount: { name: accountName(args[0]!), disabled: verb === "disable" },
            updateMask: { paths: ["disabled"] },
          }),
        ),
    }),
  ),
  {
    path: [GROUP, "bind"],
    summary: "Grant a service account roles or permissions on a project (replaces its binding there)",
    args: ["<account>"],
    options: {
      project: { type: "string", value: "PROJECT", description: "the project (required)" },
      ...BINDING_OPTIONS,
    },
    description: ROLES,
    examples: ["switchboard service-accounts bind billing-bot --project acme --role roles/viewer"],
    async run({ args, values, client }) {
      const command = `${GROUP} bind`;
      const project = str(values, "project");
      if (!project) throw new UsageError("give --project", command);
      const binding = create(BindingSchema, { project: projectName(project), ...grants(values, command) });
      return updateBindings(client, accountName(args[0]!), (bs) => [
        ...bs.filter((b) => b.project !== binding.project),
        binding,
      ]);
    },
  },
  {
    path: [GROUP, "unbind"],
    summary: "Remove a service account's binding to a project",
    args: ["<account>"],
    options: { project: { type: "string", value: "PROJECT", description: "the project (required)" } },
    examples: ["switchboard service-accounts unbind billing-bot --project acme"],
    async run({ args, values, client }) {
      const project = str(values, "project");
      if (!project) throw new UsageError("give --project", `${GROUP} unbind`);
      const name = projectName(project);
      return updateBindings(client, accountName(args[0]!), (bs) => {
        if (!bs.some((b) => b.project === name))
          throw new UsageError(`the account has no binding to ${name}`);
        return bs.filter((b) => b.project !== name);
      });
    },
  },
  {
    path: [GROUP, "delete"],
    summary: "Delete a service account and its keys; its access tokens stop working at once",
    args: ["<account>"],
    examples: ["switchboard service-accounts delete billing-bot"],
    async run({ args, client }) {
      const name = accountName(args[0]!);
      const res = await client.of(ServiceAccounts).deleteServiceAccount({ name });
      return done(EmptySchema, res, `deleted ${name}`);
    },
  },
];

/** Reads the account's bindings, changes them and writes them back (mask `bindings`). */
async function updateBindings(
  client: Invocation["client"],
  name: string,
  change: (bindings: Binding[]) => Binding[],
) {
  const api = client.of(ServiceAccounts);
  const account = await api.getServiceAccount({ name });
  const updated = await api.updateServiceAccount({
    serviceAccount: { name, bindings: change(account.bindings) },
    updateMask: { paths: ["bindings"] },
  });
  return resource(ServiceAccountSchema, updated);
}

const keyColumns = [
  idCol("KEY"),
  col("ALGORITHM", "keyAlgorithm"),
  col("DISABLED", "disabled"),
  col("CREATED", "createTime"),
];

const keys: Command[] = [
  {
    path: [GROUP, "keys", "create"],
    summary: "Create a key and print its JSON key file (shown only once; only the public key is kept)",
    args: ["<account>"],
    options: {
      output: {
        type: "string",
        short: "o",
        value: "FILE",
        description: "write the key file to FILE (mode 0600) instead of printing it",
      },
    },
    examples: [
      "switchboard service-accounts keys create billing-bot --output billing-bot.json",
      "switchboard service-accounts keys create billing-bot > billing-bot.json",
    ],
    async run({ args, values, client }) {
      const res = await client.of(ServiceAccounts).createServiceAccountKey({ parent: accountName(args[0]!) });
      const output = str(values, "output");
      if (output === undefined)
        return done(CreateServiceAccountKeyResponseSchema, res, res.keyFile.trimEnd());
      writeFileSync(output, res.keyFile, { mode: 0o600 });
      return done(CreateServiceAccountKeyResponseSchema, res, `wrote ${output} (${res.key?.name ?? "key"})`);
    },
  },
  {
    path: [GROUP, "keys", "list"],
    summary: "List a service account's keys, newest first",
    args: ["<account>"],
    options: LIST_OPTIONS,
    examples: ["switchboard service-accounts keys list billing-bot"],
    run: ({ args, values, client }) =>
      listPages(
        ListServiceAccountKeysResponseSchema,
        "keys",
        values,
        (pageSize, pageToken) =>
          client
            .of(ServiceAccounts)
            .listServiceAccountKeys({ parent: accountName(args[0]!), pageSize, pageToken }),
        keyColumns,
      ),
  },
  {
    path: [GROUP, "keys", "get"],
    summary: "Show a key (its public key, never the private one)",
    args: ["<account>", "<key>"],
    examples: ["switchboard service-accounts keys get billing-bot 3f0c...e1"],
    run: async ({ args, client }) =>
      resource(
        ServiceAccountKeySchema,
        await client.of(ServiceAccounts).getServiceAccountKey({ name: keyName(args[0]!, args[1]!) }),
      ),
  },
  ...(["disable", "enable"] as const).map(
    (verb): Command => ({
      path: [GROUP, "keys", verb],
      summary:
        verb === "disable"
          ? "Disable a key: the access tokens got with it are refused at once, until enabled"
          : "Enable a disabled key",
      args: ["<account>", "<key>"],
      examples: [`switchboard service-accounts keys ${verb} billing-bot 3f0c...e1`],
      run: async ({ args, client }) =>
        resource(
          ServiceAccountKeySchema,
          await client.of(ServiceAccounts).updateServiceAccountKey({
            serviceAccountKey: { name: keyName(args[0]!, args[1]!), disabled: verb === "disable" },
            updateMask: { paths: ["disabled"] },
          }),
        ),
    }),
  ),
  {
    path: [GROUP, "keys", "delete"],
    summary: "Delete a key; the access tokens got with it stop working at once",
    args: ["<account>", "<key>"],
    examples: ["switchboard service-accounts keys delete billing-bot 3f0c...e1"],
    async run({ args, client }) {
      const name = keyName(args[0]!, args[1]!);
      const res = await client.of(ServiceAccounts).deleteServiceAccountKey({ name });
      return done(EmptySchema, res, `deleted ${name}`);
    },
  },
];

export const serviceAccountCommands: Command[] = [...accounts, ...keys, ...tokenCommands];
