/**
 * Commands for voice and messaging: the operator's SIP domain actions, and
 * reading a project's SIP domains, calls, recordings and messages through
 * the public API (the operator token may read every project).
 */
import {
  ListMessagesResponseSchema,
  MessageSchema,
  Messages,
} from "../../gen/enfonica/messaging/v1/messages_pb.js";
import { CallSchema, Calls, ListCallsResponseSchema } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  ListRecordingsResponseSchema,
  RecordingSchema,
  Recordings,
} from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import {
  ListSipDomainsResponseSchema,
  SipDomainSchema,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { CollabVerificationSchema, SipDomainAdmin } from "../../gen/switchboard/admin/v1/sip_domains_pb.js";
import {
  childName,
  flag,
  LIST_OPTIONS,
  listPages,
  PROJECT_OPTION,
  projectName,
  resource,
  str,
  strs,
} from "./args.js";
import { type Command, UsageError, type Values } from "./command.js";
import { migrateBlobsCommand } from "./migrate-blobs.js";
import { col, idCol } from "./output.js";

const domainName = (arg: string, values: Values) => childName(arg, "sipDomains", values);

const sipDomains: Command[] = [
  {
    path: ["sip-domains", "list"],
    summary: "List a project's SIP domains, newest first",
    args: ["<project>"],
    options: { "show-deleted": { type: "boolean", description: "include deleted domains" }, ...LIST_OPTIONS },
    examples: ["switchboard sip-domains list acme"],
    run: ({ args, values, client }) =>
      listPages(
        ListSipDomainsResponseSchema,
        "sipDomains",
        values,
        (pageSize, pageToken) =>
          client.of(SipDomains).listSipDomains({
            parent: projectName(args[0]!),
            pageSize,
            pageToken,
            showDeleted: flag(values, "show-deleted"),
          }),
        [
          idCol("DOMAIN"),
          col("FQDN", "fqdn"),
          col("TYPE", "type"),
          col("TERMINATION", "callTerminationMode"),
          col("DOMAIN OPTIONAL", "domainOptional"),
          col("DELETED", "deleteTime"),
        ],
      ),
  },
  {
    path: ["sip-domains", "get"],
    summary: "Show a SIP domain",
    args: ["<domain>"],
    options: PROJECT_OPTION,
    examples: ["switchboard sip-domains get acme-office --project acme"],
    run: async ({ args, values, client }) =>
      resource(
        SipDomainSchema,
        await client.of(SipDomains).getSipDomain({ name: domainName(args[0]!, values) }),
      ),
  },
  {
    path: ["sip-domains", "domain-optional"],
    summary: "Turn a SIP domain's domain-optional mode on or off, with its CIDR blocks",
    args: ["<domain>", "<on|off>"],
    options: {
      cidr: {
        type: "string",
        multiple: true,
        value: "CIDR",
        description: "an IPv4 block replacing the domain's blocks (repeatable; at least one for 'on')",
      },
      ...PROJECT_OPTION,
    },
    description:
      "While on, calls naming no domain are matched to this domain by source network, and\n" +
      "users cannot change its CIDR blocks. Blocks may not overlap other domain-optional domains'.",
    examples: [
      "switchboard sip-domains domain-optional acme-office on --project acme --cidr 203.0.113.0/24",
      "switchboard sip-domains domain-optional projects/acme/sipDomains/acme-office off",
    ],
    async run({ args, values, client }) {
      const mode = args[1]!.toLowerCase();
      if (mode !== "on" && mode !== "off") {
        throw new UsageError(
          `expected on or off, got ${JSON.stringify(args[1])}`,
          "sip-domains domain-optional",
        );
      }
      const domain = await client.of(SipDomainAdmin).setDomainOptional({
        name: domainName(args[0]!, values),
        domainOptional: mode === "on",
        cidrBlocks: strs(values, "cidr").map((cidrBlock) => ({ cidrBlock })),
      });
      return resource(SipDomainSchema, domain);
    },
  },
  {
    path: ["sip-domains", "collab-verification"],
    summary: "Show a collaboration direct-routing domain's verification record and state",
    args: ["<domain>"],
    options: PROJECT_OPTION,
    examples: ["switchboard sip-domains collab-verification teams --project acme"],
    run: async ({ args, values, client }) =>
      resource(
        CollabVerificationSchema,
        await client.of(SipDomainAdmin).getCollabVerification({ name: domainName(args[0]!, values) }),
      ),
  },
  {
    path: ["sip-domains", "accept-collab"],
    summary: "Accept a domain's published verification record, as the platform's tenant would",
    args: ["<domain>"],
    options: PROJECT_OPTION,
    examples: ["switchboard sip-domains accept-collab teams --project acme"],
    run: async ({ args, values, client }) =>
      resource(
        CollabVerificationSchema,
        await client.of(SipDomainAdmin).acceptCollabVerification({ name: domainName(args[0]!, values) }),
      ),
  },
];

const calls: Command[] = [
  {
    path: ["calls", "list"],
    summary: "List a project's calls, newest first",
    args: ["<project>"],
    options: {
      filter: {
        type: "string",
        value: "EXPR",
        description:
          "only matching calls (AIP-160 subset), e.g. 'direction = INCOMING AND state = COMPLETED'",
      },
      ...LIST_OPTIONS,
    },
    examples: ["switchboard calls list acme --filter 'state = FAILED' --limit 20"],
    run: ({ args, values, client }) =>
      listPages(
        ListCallsResponseSchema,
        "calls",
        values,
        (pageSize, pageToken) =>
          client.of(Calls).listCalls({
            parent: projectName(args[0]!),
            pageSize,
            pageToken,
            filter: str(values, "filter") ?? "",
          }),
        [
          idCol("CALL"),
          col("DIRECTION", "direction"),
          col("STATE", "state"),
          col("FROM", "from"),
          col("TO", "to"),
          col("ERROR", "errorCode"),
          col("CREATED", "createTime"),
        ],
      ),
  },
  {
    path: ["calls", "get"],
    summary: "Show a call",
    args: ["<call>"],
    options: PROJECT_OPTION,
    examples: [
      "switchboard calls get projects/acme/calls/c0ffee",
      "switchboard calls get c0ffee --project acme",
    ],
    run: async ({ args, values, client }) =>
      resource(CallSchema, await client.of(Calls).getCall({ name: childName(args[0]!, "calls", values) })),
  },
];

const recordings: Command[] = [
  {
    path: ["recordings", "list"],
    summary: "List the recordings of a project, or of one call, newest first",
    args: ["<project-or-call>"],
    options: {
      call: {
        type: "string",
        value: "CALL",
        description: "only this call's recordings (an id of the project)",
      },
      ...LIST_OPTIONS,
    },
    examples: [
      "switchboard recordings list acme",
      "switchboard recordings list acme --call c0ffee",
      "switchboard recordings list projects/acme/calls/c0ffee",
    ],
    run({ args, values, client }) {
      const call = str(values, "call");
      const arg = args[0]!;
      const parent = arg.includes("/calls/") ? arg : `${projectName(arg)}${call ? `/calls/${call}` : ""}`;
      return listPages(
        ListRecordingsResponseSchema,
        "recordings",
        values,
        (pageSize, pageToken) => client.of(Recordings).listRecordings({ parent, pageSize, pageToken }),
        [
          {
            header: "CALL",
            value: (r: { name?: string }) => r.name?.split("/")[3],
          },
          idCol("RECORDING"),
          col("STATE", "state"),
          col("SOURCE", "source"),
          col("DURATION", "duration"),
          col("CREATED", "createTime"),
        ],
      );
    },
  },
  {
    path: ["recordings", "get"],
    summary: "Show a recording, with its time-limited download links",
    args: ["<recording>"],
    options: {
      ...PROJECT_OPTION,
      call: { type: "string", value: "CALL", description: "the call, when the name given is only an id" },
    },
    description: "Download links are paths on the server (--url) unless it sets RECORDING_LINK_BASE_URL.",
    examples: [
      "switchboard recordings get projects/acme/calls/c0ffee/recordings/r1",
      "switchboard recordings get r1 --project acme --call c0ffee",
    ],
    async run({ args, values, client }) {
      const arg = args[0]!;
      let name = arg;
      if (!arg.startsWith("projects/")) {
        const project = str(values, "project");
        const call = str(values, "call");
        if (!project || !call) {
          throw new UsageError(
            "give the full name projects/<project>/calls/<call>/recordings/<id>, or --project and --call",
            "recordings get",
          );
        }
        name = `${projectName(project)}/calls/${call}/recordings/${arg}`;
      }
      return resource(RecordingSchema, await client.of(Recordings).getRecording({ name }));
    },
  },
];

const messages: Command[] = [
  {
    path: ["messages", "list"],
    summary: "List a project's messages, newest first",
    args: ["<project>"],
    options: {
      filter: { type: "string", value: "EXPR", description: "only matching messages (AIP-160 subset)" },
      ...LIST_OPTIONS,
    },
    examples: ["switchboard messages list acme --limit 20"],
    run: ({ args, values, client }) =>
      listPages(
        ListMessagesResponseSchema,
        "messages",
        values,
        (pageSize, pageToken) =>
          client.of(Messages).listMessages({
            parent: projectName(args[0]!),
            pageSize,
            pageToken,
            filter: str(values, "filter") ?? "",
          }),
        [
          idCol("MESSAGE"),
          col("DIRECTION", "direction"),
          col("STATUS", "status"),
          col("FROM", "from"),
          col("TO", "to"),
          col("BODY", "body"),
          col("CREATED", "createTime"),
        ],
      ),
  },
  {
    path: ["messages", "get"],
    summary: "Show a message",
    args: ["<message>"],
    options: PROJECT_OPTION,
    examples: ["switchboard messages get m1 --project acme"],
    run: async ({ args, values, client }) =>
      resource(
        MessageSchema,
        await client.of(Messages).getMessage({ name: childName(args[0]!, "messages", values) }),
      ),
  },
];

export const voiceCommands: Command[] = [
  ...sipDomains,
  ...calls,
  ...recordings,
  migrateBlobsCommand,
  ...messages,
];
