/**
 * `switchboard` — the operator's command line. Talks to a running server
 * through the admin API (Connect protocol) with the operator token.
 *
 *   switchboard projects create <id> [--display-name NAME]
 *   switchboard projects list | get <id> | delete <id>
 *   switchboard keys create --project <id> [--project <id>...] [--role R...] [--permission P...] [--display-name NAME]
 *   switchboard keys list | get <key> | disable <key> | enable <key> | delete <key>
 *   switchboard signing-key get <project> | rotate <project>
 *
 * Options: --url (SWITCHBOARD_URL, default http://127.0.0.1:8080), --token
 * (SWITCHBOARD_OPERATOR_TOKEN, else DATA_DIR/operator-token of a local
 * embedded server).
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { create, type DescMessage, type MessageShape, toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import {
  ApiKeySchema,
  ApiKeys,
  BindingSchema,
  CreateApiKeyResponseSchema,
} from "../gen/switchboard/admin/v1/api_keys_pb.js";
import { ProjectSchema, Projects, SigningKeySchema } from "../gen/switchboard/admin/v1/projects_pb.js";

export class UsageError extends Error {}

const USAGE = `usage: switchboard [--url URL] [--token TOKEN] <command>

  projects create <id> [--display-name NAME]
  projects list
  projects get <id>
  projects delete <id>
  keys create --project <id> [--project <id> ...] [--role ROLE ...] [--permission PERM ...] [--display-name NAME]
  keys list
  keys get <key>
  keys disable <key>
  keys enable <key>
  keys delete <key>
  signing-key get <project>
  signing-key rotate <project>

Roles: roles/owner, roles/viewer, roles/numbering.admin, roles/voice.admin,
roles/messaging.admin, roles/webhooks.verifier.`;

function operatorToken(explicit: string | undefined, env: NodeJS.ProcessEnv): string {
  if (explicit) return explicit;
  if (env.SWITCHBOARD_OPERATOR_TOKEN) return env.SWITCHBOARD_OPERATOR_TOKEN;
  try {
    return readFileSync(join(resolve(env.DATA_DIR || "./data"), "operator-token"), "utf8").trim();
  } catch {
    throw new UsageError("no operator token: pass --token or set SWITCHBOARD_OPERATOR_TOKEN");
  }
}

function print<D extends DescMessage>(desc: D, msg: MessageShape<D>, out: (s: string) => void): void {
  out(toJsonString(desc, msg, { prettySpaces: 2 }));
}

function keyName(arg: string | undefined): string {
  if (!arg) throw new UsageError("missing key id");
  return arg.startsWith("apiKeys/") ? arg : `apiKeys/${arg}`;
}

function projectName(arg: string | undefined): string {
  if (!arg) throw new UsageError("missing project id");
  return arg.startsWith("projects/") ? arg : `projects/${arg}`;
}

export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  out: (s: string) => void = (s) => process.stdout.write(`${s}\n`),
): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: "string" },
      token: { type: "string" },
      "display-name": { type: "string" },
      project: { type: "string", multiple: true },
      role: { type: "string", multiple: true },
      permission: { type: "string", multiple: true },
      help: { type: "boolean", short: "h" },
    },
  });
  const [area, verb, arg] = positionals;
  if (values.help || !area) {
    out(USAGE);
    return;
  }
  const baseUrl = values.url ?? env.SWITCHBOARD_URL ?? "http://127.0.0.1:8080";
  const token = operatorToken(values.token, env);
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [auth] });
  const projects = createClient(Projects, transport);
  const keys = createClient(ApiKeys, transport);

  switch (`${area} ${verb ?? ""}`) {
    case "projects create": {
      if (!arg) throw new UsageError("usage: projects create <id> [--display-name NAME]");
      const p = await projects.createProject({
        projectId: arg,
        project: { displayName: values["display-name"] ?? "" },
      });
      return print(ProjectSchema, p, out);
    }
    case "projects list": {
      let pageToken = "";
      do {
        const page = await projects.listProjects({ pageSize: 100, pageToken });
        for (const p of page.projects) print(ProjectSchema, p, out);
        pageToken = page.nextPageToken;
      } while (pageToken);
      return;
    }
    case "projects get":
      return print(ProjectSchema, await projects.getProject({ name: projectName(arg) }), out);
    case "projects delete":
      return print(ProjectSchema, await projects.deleteProject({ name: projectName(arg) }), out);
    case "keys create": {
      const projectIds = values.project ?? [];
      if (projectIds.length === 0) throw new UsageError("keys create needs at least one --project");
      const roles = values.role ?? [];
      const permissions = values.permission ?? [];
      if (roles.length === 0 && permissions.length === 0) {
        throw new UsageError("keys create needs at least one --role or --permission");
      }
      const apiKey = create(ApiKeySchema, {
        displayName: values["display-name"] ?? "",
        bindings: projectIds.map((p) =>
          create(BindingSchema, { project: projectName(p), roles, permissions }),
        ),
      });
      const res = await keys.createApiKey({ apiKey });
      return print(CreateApiKeyResponseSchema, res, out);
    }
    case "keys list": {
      let pageToken = "";
      do {
        const page = await keys.listApiKeys({ pageSize: 100, pageToken });
        for (const k of page.apiKeys) print(ApiKeySchema, k, out);
        pageToken = page.nextPageToken;
      } while (pageToken);
      return;
    }
    case "keys get":
      return print(ApiKeySchema, await keys.getApiKey({ name: keyName(arg) }), out);
    case "keys disable":
    case "keys enable": {
      const k = await keys.updateApiKey({
        apiKey: { name: keyName(arg), disabled: verb === "disable" },
        updateMask: { paths: ["disabled"] },
      });
      return print(ApiKeySchema, k, out);
    }
    case "keys delete":
      await keys.deleteApiKey({ name: keyName(arg) });
      out(`deleted ${keyName(arg)}`);
      return;
    case "signing-key get":
      return print(
        SigningKeySchema,
        await projects.getSigningKey({ name: `${projectName(arg)}/signingKey` }),
        out,
      );
    case "signing-key rotate":
      return print(
        SigningKeySchema,
        await projects.rotateSigningKey({ name: `${projectName(arg)}/signingKey` }),
        out,
      );
    default:
      throw new UsageError(`unknown command: ${positionals.join(" ")}\n\n${USAGE}`);
  }
}

export async function main(argv = process.argv.slice(2)): Promise<number> {
  try {
    await runCli(argv);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    if (err instanceof ConnectError) {
      const hint =
        err.code === Code.Unavailable
          ? " (is the server running? pass --url)"
          : err.code === Code.Unauthenticated
            ? " (check --token)"
            : "";
      process.stderr.write(`error: ${Code[err.code]}: ${err.rawMessage}${hint}\n`);
      return 1;
    }
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
