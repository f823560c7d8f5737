/** Commands for projects, API keys and their bindings, and webhook signing keys. */
import { create } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import {
  ApiKeySchema,
  ApiKeys,
  type Binding,
  BindingSchema,
  CreateApiKeyResponseSchema,
  ListApiKeysResponseSchema,
} from "../../gen/switchboard/admin/v1/api_keys_pb.js";
import {
  ListProjectsResponseSchema,
  ProjectSchema,
  Projects,
  SigningKeySchema,
} from "../../gen/switchboard/admin/v1/projects_pb.js";
import { done, LIST_OPTIONS, listPages, projectName, resource, str, strs } from "./args.js";
import { type Command, type Invocation, type OptionSpec, UsageError } from "./command.js";
import { col, idCol, type Json } from "./output.js";

const ROLES =
  "Roles: roles/owner, roles/viewer, roles/numbering.admin, roles/voice.admin,\n" +
  "roles/messaging.admin, roles/webhooks.verifier. Permissions are the names of the\n" +
  "interface document, e.g. voice.calls.get.";

function keyName(arg: string): string {
  return arg.startsWith("apiKeys/") ? arg : `apiKeys/${arg}`;
}

const projects: Command[] = [
  {
    path: ["projects", "create"],
    summary: "Create a project (with a fresh webhook signing key)",
    args: ["<project>"],
    options: { "display-name": { type: "string", value: "NAME", description: "a name for people" } },
    examples: ['switchboard projects create acme --display-name "Acme Pty Ltd"'],
    async run({ args, values, client }) {
      const p = await client.of(Projects).createProject({
        projectId: args[0]!,
        project: { displayName: str(values, "display-name") ?? "" },
      });
      return resource(ProjectSchema, p);
    },
  },
  {
    path: ["projects", "list"],
    summary: "List projects, newest first",
    options: LIST_OPTIONS,
    examples: ["switchboard projects list", "switchboard projects list --json"],
    run: ({ values, client }) =>
      listPages(
        ListProjectsResponseSchema,
        "projects",
        values,
        (pageSize, pageToken) => client.of(Projects).listProjects({ pageSize, pageToken }),
        [idCol("PROJECT"), col("DISPLAY NAME", "displayName"), col("CREATED", "createTime")],
      ),
  },
  {
    path: ["projects", "get"],
    summary: "Show a project",
    args: ["<project>"],
    examples: ["switchboard projects get acme"],
    run: async ({ args, client }) =>
      resource(ProjectSchema, await client.of(Projects).getProject({ name: projectName(args[0]!) })),
  },
  {
    path: ["projects", "delete"],
    summary: "Delete a project and every resource in it",
    args: ["<project>"],
    examples: ["switchboard projects delete acme"],
    async run({ args, client }) {
      const p = await client.of(Projects).deleteProject({ name: projectName(args[0]!) });
      return done(ProjectSchema, p, `deleted ${p.name}`);
    },
  },
];

const BINDING_OPTIONS: Record<string, OptionSpec> = {
  role: { type: "string", multiple: true, value: "ROLE", description: "a role to grant (repeatable)" },
  permission: {
    type: "string",
    multiple: true,
    value: "PERMISSION",
    description: "a permission to grant (repeatable)",
  },
};

function grants(values: Invocation["values"]): { roles: string[]; permissions: string[] } {
  const roles = strs(values, "role");
  const permissions = strs(values, "permission");
  if (roles.length === 0 && permissions.length === 0) {
    throw new UsageError("give at least one --role or --permission");
  }
  return { roles, permissions };
}

const keyColumns = [
  idCol("KEY"),
  col("DISPLAY NAME", "displayName"),
  col("DISABLED", "disabled"),
  col("PREFIX", "secretPrefix"),
  { header: "PROJECTS", value: (k: Json) => (k.bindings as Json[]).map((b) => b.project) },
  col("CREATED", "createTime"),
];

const keys: Command[] = [
  {
    path: ["keys", "create"],
    summary: "Create an API key bound to projects; prints its secret (shown only once)",
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
      "switchboard keys create --project acme --role roles/owner",
      "switchboard keys create --project acme --permission voice.calls.get --display-name reporting",
    ],
    async run({ values, client }) {
      const projectIds = strs(values, "project");
      if (projectIds.length === 0) throw new UsageError("give at least one --project", "keys create");
      const { roles, permissions } = grants(values);
      const res = await client.of(ApiKeys).createApiKey({
        apiKey: {
          displayName: str(values, "display-name") ?? "",
          bindings: projectIds.map((p) =>
            create(BindingSchema, { project: projectName(p), roles, permissions }),
          ),
        },
      });
      return resource(CreateApiKeyResponseSchema, res);
    },
  },
  {
    path: ["keys", "list"],
    summary: "List API keys, newest first (never their secrets)",
    options: LIST_OPTIONS,
    examples: ["switchboard keys list"],
    run: ({ values, client }) =>
      listPages(
        ListApiKeysResponseSchema,
        "apiKeys",
        values,
        (pageSize, pageToken) => client.of(ApiKeys).listApiKeys({ pageSize, pageToken }),
        keyColumns,
      ),
  },
  {
    path: ["keys", "get"],
    summary: "Show an API key and its bindings",
    args: ["<key>"],
    examples: ["switchboard keys get k1a2b3c4"],
    run: async ({ args, client }) =>
      resource(ApiKeySchema, await client.of(ApiKeys).getApiKey({ name: keyName(args[0]!) })),
  },
  {
    path: ["keys", "rename"],
    summary: "Change an API key's display name",
    args: ["<key>", "<display-name>"],
    examples: ['switchboard keys rename k1a2b3c4 "billing export"'],
    run: async ({ args, client }) =>
      resource(
        ApiKeySchema,
        await client.of(ApiKeys).updateApiKey({
          apiKey: { name: keyName(args[0]!), displayName: args[1]! },
          updateMask: { paths: ["display_name"] },
        }),
      ),
  },
  ...(["disable", "enable"] as const).map(
    (verb): Command => ({
      path: ["keys", verb],
      summary:
        verb === "disable"
          ? "Disable an API key: it is refused at once, until enabled"
          : "Enable a disabled API key",
      args: ["<key>"],
      examples: [`switchboard keys ${verb} k1a2b3c4`],
      run: async ({ args, client }) =>
        resource(
          ApiKeySchema,
          await client.of(ApiKeys).updateApiKey({
            apiKey: { name: keyName(args[0]!), disabled: verb === "disable" },
            updateMask: { paths: ["disabled"] },
          }),
        ),
    }),
  ),
  {
    path: ["keys", "bind"],
    summary: "Grant an API key roles or permissions on a project (replaces its binding there)",
    args: ["<key>"],
    options: {
      project: { type: "string", value: "PROJECT", description: "the project (required)" },
      ...BINDING_OPTIONS,
    },
    description: ROLES,
    examples: ["switchboard keys bind k1a2b3c4 --project acme --role roles/viewer"],
    async run({ args, values, client }) {
      const project = str(values, "project");
      if (!project) throw new UsageError("give --project", "keys bind");
      const binding = create(BindingSchema, { project: projectName(project), ...grants(values) });
      return updateBindings(client, keyName(args[0]!), (bs) => [
        ...bs.filter((b) => b.project !== binding.project),
        binding,
      ]);
    },
  },
  {
    path: ["keys", "unbind"],
    summary: "Remove an API key's binding to a project",
    args: ["<key>"],
    options: { project: { type: "string", value: "PROJECT", description: "the project (required)" } },
    examples: ["switchboard keys unbind k1a2b3c4 --project acme"],
    async run({ args, values, client }) {
      const project = str(values, "project");
      if (!project) throw new UsageError("give --project", "keys unbind");
      const name = projectName(project);
      return updateBindings(client, keyName(args[0]!), (bs) => {
        if (!bs.some((b) => b.project === name)) throw new UsageError(`the key has no binding to ${name}`);
        return bs.filter((b) => b.project !== name);
      });
    },
  },
  {
    path: ["keys", "delete"],
    summary: "Delete an API key; it stops working at once",
    args: ["<key>"],
    examples: ["switchboard keys delete k1a2b3c4"],
    async run({ args, client }) {
      const name = keyName(args[0]!);
      const res = await client.of(ApiKeys).deleteApiKey({ name });
      return done(EmptySchema, res, `deleted ${name}`);
    },
  },
];

/** Reads the key's bindings, changes them and writes them back (UpdateApiKey with mask `bindings`). */
async function updateBindings(
  client: Invocation["client"],
  name: string,
  change: (bindings: Binding[]) => Binding[],
) {
  const api = client.of(ApiKeys);
  const key = await api.getApiKey({ name });
  const updated = await api.updateApiKey({
    apiKey: { name, bindings: change(key.bindings) },
    updateMask: { paths: ["bindings"] },
  });
  return resource(ApiKeySchema, updated);
}

const signingKey: Command[] = (["get", "rotate"] as const).map((verb) => ({
  path: ["signing-key", verb],
  summary:
    verb === "get"
      ? "Show a project's webhook signing key (64 bytes, base64)"
      : "Replace a project's webhook signing key with a new random one",
  args: ["<project>"],
  examples: [`switchboard signing-key ${verb} acme`],
  async run({ args, client }) {
    const name = `${projectName(args[0]!)}/signingKey`;
    const api = client.of(Projects);
    const key = verb === "get" ? await api.getSigningKey({ name }) : await api.rotateSigningKey({ name });
    return resource(SigningKeySchema, key);
  },
}));

export const adminCommands: Command[] = [...projects, ...keys, ...signingKey];
