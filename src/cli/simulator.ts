/**
 * Commands for the carrier simulator (routes, incoming calls and messages)
 * and for a project's webhook deliveries.
 */
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MessageSchema } from "../../gen/enfonica/messaging/v1/messages_pb.js";
import {
  InjectIncomingCallResponseSchema,
  ListRoutesResponseSchema,
  SimulatorAdmin,
  SimulatorRoute_AudioSchema,
  SimulatorRoute_MessageOutcomeSchema,
  SimulatorRoute_OutcomeSchema,
  SimulatorRouteSchema,
} from "../../gen/switchboard/admin/v1/simulator_pb.js";
import {
  ListWebhookDeliveriesResponseSchema,
  WebhookDeliveries,
  WebhookDeliverySchema,
} from "../../gen/switchboard/admin/v1/webhooks_pb.js";
import { WebhookDeliveries as ProjectWebhookDeliveries } from "../../gen/switchboard/webhooks/v1/webhook_deliveries_pb.js";
import {
  childName,
  done,
  enumNames,
  enumValue,
  flag,
  int,
  LIST_OPTIONS,
  listPages,
  PROJECT_OPTION,
  projectName,
  resource,
  str,
} from "./args.js";
import { type Command, UsageError } from "./command.js";
import { col, idCol, type Json } from "./output.js";

const routeName = (arg: string) => (arg.startsWith("simulator/routes/") ? arg : `simulator/routes/${arg}`);

const routes: Command[] = [
  {
    path: ["simulator", "routes", "create"],
    summary: "Program what the simulated network does with calls to numbers starting with a prefix",
    options: {
      prefix: {
        type: "string",
        value: "PREFIX",
        description: "destination prefix, '+' and up to 15 digits (default: every destination)",
      },
      outcome: {
        type: "string",
        value: "OUTCOME",
        description: `${enumNames(SimulatorRoute_OutcomeSchema).join(", ")} (default ANSWER)`,
      },
      "ring-seconds": {
        type: "string",
        value: "N",
        description: "ringing before ANSWER or REJECT, 0-600 (2)",
      },
      "talk-seconds": { type: "string", value: "N", description: "talk after answering, 0-86400 (30)" },
      audio: {
        type: "string",
        value: "AUDIO",
        description: `the remote party's audio: ${enumNames(SimulatorRoute_AudioSchema).join(", ")} (SPEECH)`,
      },
      digits: { type: "string", value: "KEYS", description: "keys pressed when asked for input (0-9 * #)" },
      words: {
        type: "string",
        value: "TEXT",
        description: "what a SPEECH party says, again and again (transcriptions carry it)",
      },
      "error-code": {
        type: "string",
        value: "CODE",
        description: "the call's error code when it does not connect",
      },
      "error-message": { type: "string", value: "TEXT", description: "the call's error message" },
      "message-outcome": {
        type: "string",
        value: "OUTCOME",
        description: "what happens to messages: DELIVER, FAIL or UNDELIVERED (default DELIVER)",
      },
      "message-deliver-seconds": {
        type: "string",
        value: "N",
        description: "seconds from SENT to DELIVERED or UNDELIVERED, 0-86400 (1)",
      },
      "message-error-code": {
        type: "string",
        value: "CODE",
        description: "the message's error code for FAIL and UNDELIVERED",
      },
      "message-error-message": { type: "string", value: "TEXT", description: "the message's error message" },
    },
    description:
      "The longest matching prefix wins; a taken prefix is ALREADY_EXISTS (delete that route first).\n" +
      "Calls and outgoing messages to the prefix both take the route.",
    examples: [
      "switchboard simulator routes create --prefix +6149157 --outcome BUSY",
      "switchboard simulator routes create --prefix +614 --ring-seconds 5 --talk-seconds 10 --digits 1#",
      'switchboard simulator routes create --prefix +61491570199 --words "I would like to book a table"',
      "switchboard simulator routes create --prefix +61491570199 --message-outcome FAIL --message-error-code 30007",
    ],
    async run({ values, client }) {
      const outcome = str(values, "outcome");
      const audio = str(values, "audio");
      const ringSeconds = int(values, "ring-seconds", 0, 600);
      const talkSeconds = int(values, "talk-seconds", 0, 86_400);
      const messageOutcome = str(values, "message-outcome")
        ?.toUpperCase()
        .replace(/^(MESSAGE_)?/, "MESSAGE_");
      const messageDeliverSeconds = int(values, "message-deliver-seconds", 0, 86_400);
      const route = await client.of(SimulatorAdmin).createRoute({
        route: {
          prefix: str(values, "prefix") ?? "",
          outcome: outcome ? enumValue(SimulatorRoute_OutcomeSchema, outcome, "--outcome") : 0,
          audio: audio ? enumValue(SimulatorRoute_AudioSchema, audio, "--audio") : 0,
          ...(ringSeconds === undefined ? {} : { ringSeconds }),
          ...(talkSeconds === undefined ? {} : { talkSeconds }),
          digits: str(values, "digits") ?? "",
          words: str(values, "words") ?? "",
          errorCode: str(values, "error-code") ?? "",
          errorMessage: str(values, "error-message") ?? "",
          messageOutcome: messageOutcome
            ? enumValue(SimulatorRoute_MessageOutcomeSchema, messageOutcome, "--message-outcome")
            : 0,
          ...(messageDeliverSeconds === undefined ? {} : { messageDeliverSeconds }),
          messageErrorCode: str(values, "message-error-code") ?? "",
          messageErrorMessage: str(values, "message-error-message") ?? "",
        },
      });
      return resource(SimulatorRouteSchema, route);
    },
  },
  {
    path: ["simulator", "routes", "list"],
    summary: "List the simulator's routes, newest first",
    options: LIST_OPTIONS,
    examples: ["switchboard simulator routes list"],
    run: ({ values, client }) =>
      listPages(
        ListRoutesResponseSchema,
        "routes",
        values,
        (pageSize, pageToken) => client.of(SimulatorAdmin).listRoutes({ pageSize, pageToken }),
        [
          idCol("ROUTE"),
          col("PREFIX", "prefix"),
          col("OUTCOME", "outcome"),
          col("RING", "ringSeconds"),
          col("TALK", "talkSeconds"),
          col("AUDIO", "audio"),
          col("DIGITS", "digits"),
          col("ERROR", "errorCode"),
        ],
      ),
  },
  {
    path: ["simulator", "routes", "get"],
    summary: "Show a simulator route",
    args: ["<route>"],
    examples: ["switchboard simulator routes get r0123456789abcdef"],
    run: async ({ args, client }) =>
      resource(SimulatorRouteSchema, await client.of(SimulatorAdmin).getRoute({ name: routeName(args[0]!) })),
  },
  {
    path: ["simulator", "routes", "delete"],
    summary: "Delete a simulator route (calls in progress keep it)",
    args: ["<route>"],
    examples: ["switchboard simulator routes delete r0123456789abcdef"],
    async run({ args, client }) {
      const name = routeName(args[0]!);
      return done(EmptySchema, await client.of(SimulatorAdmin).deleteRoute({ name }), `deleted ${name}`);
    },
  },
];

const incoming: Command[] = [
  {
    path: ["simulator", "incoming-call"],
    summary: "Deliver a call from the network to a number (or a SIP domain); prints the call",
    args: ["<to>"],
    options: {
      from: {
        type: "string",
        value: "NUMBER",
        description: "the caller ID, E.164 (or a SIP URI for SIP domains)",
      },
      private: { type: "boolean", description: "the caller withheld their number" },
      "sip-domain": { type: "string", value: "FQDN", description: "a call to this SIP domain" },
      "source-ip": { type: "string", value: "IP", description: "the SIP caller's IPv4 address" },
      user: { type: "string", value: "USER", description: "the SIP domain user the caller authenticated as" },
    },
    examples: [
      "switchboard simulator incoming-call +61255501000 --from +61491570156",
      "switchboard simulator incoming-call 1001 --sip-domain acme.sip.switchboard.local --source-ip 203.0.113.5",
    ],
    async run({ args, values, client }) {
      const res = await client.of(SimulatorAdmin).injectIncomingCall({
        to: args[0]!,
        from: str(values, "from") ?? "",
        isPrivate: flag(values, "private"),
        sipDomain: str(values, "sip-domain") ?? "",
        sourceIp: str(values, "source-ip") ?? "",
        user: str(values, "user") ?? "",
      });
      return done(InjectIncomingCallResponseSchema, res, `call: ${res.call}`);
    },
  },
  {
    path: ["simulator", "incoming-message"],
    summary: "Deliver a message from the network to a number; prints the recorded message",
    args: ["<to>"],
    options: {
      from: { type: "string", value: "NUMBER", description: "the sender, E.164 (required)" },
      body: {
        type: "string",
        value: "TEXT",
        description: "the text (STOP and the like unsubscribe the sender)",
      },
    },
    examples: ["switchboard simulator incoming-message +61255501000 --from +61491570156 --body 'hello'"],
    async run({ args, values, client }) {
      const from = str(values, "from");
      if (!from) throw new UsageError("give --from", "simulator incoming-message");
      const message = await client
        .of(SimulatorAdmin)
        .injectIncomingMessage({ to: args[0]!, from, body: str(values, "body") ?? "" });
      return resource(MessageSchema, message);
    },
  },
];

const deliveryName = (arg: string, values: Parameters<typeof childName>[2]) =>
  childName(arg, "webhookDeliveries", values);

const webhooks: Command[] = [
  {
    path: ["webhooks", "list"],
    summary: "List a project's webhook deliveries and call-control exchanges, newest first",
    args: ["<project>"],
    options: {
      filter: {
        type: "string",
        value: "EXPR",
        description:
          "only matching deliveries (AIP-160 subset: event, state, host, call, create_time), e.g. 'event = CALL AND state = FAILED'",
      },
      ...LIST_OPTIONS,
    },
    description:
      "--json shows every attempt (URI, status or error, times), the body sent and the markup received.",
    examples: [
      "switchboard webhooks list acme --limit 20",
      "switchboard webhooks list acme --filter 'event = CALL AND state = FAILED'",
      "switchboard webhooks list acme --json",
    ],
    run: ({ args, values, client }) =>
      listPages(
        ListWebhookDeliveriesResponseSchema,
        "webhookDeliveries",
        values,
        (pageSize, pageToken) =>
          client.of(WebhookDeliveries).listWebhookDeliveries({
            parent: projectName(args[0]!),
            pageSize,
            pageToken,
            filter: str(values, "filter") ?? "",
          }),
        [
          idCol("DELIVERY"),
          col("EVENT", "eventType"),
          col("STATE", "state"),
          col("ROUNDS", "roundCount"),
          {
            header: "LAST ATTEMPT",
            value: (d: Json) => {
              const last = (d.attempts as Json[]).at(-1);
              return last ? `${last.statusCode || last.error} ${last.uri}` : "";
            },
          },
          col("NEXT ATTEMPT", "nextAttemptTime"),
          col("CREATED", "createTime"),
        ],
      ),
  },
  {
    path: ["webhooks", "get"],
    summary: "Show one delivery: its attempts, the body sent and, for call control, the markup received",
    args: ["<delivery>"],
    options: PROJECT_OPTION,
    examples: [
      "switchboard webhooks get projects/acme/webhookDeliveries/d0123",
      "switchboard webhooks get d0123 --project acme",
    ],
    run: async ({ args, values, client }) =>
      resource(
        WebhookDeliverySchema,
        await client
          .of(ProjectWebhookDeliveries)
          .getWebhookDelivery({ name: deliveryName(args[0]!, values) }),
      ),
  },
  {
    path: ["webhooks", "redeliver"],
    summary: "Make one more delivery round of a FAILED delivery now, with the same webhook-id",
    args: ["<delivery>"],
    options: PROJECT_OPTION,
    examples: ["switchboard webhooks redeliver d0123 --project acme"],
    run: async ({ args, values, client }) =>
      resource(
        WebhookDeliverySchema,
        await client
          .of(ProjectWebhookDeliveries)
          .redeliverWebhookDelivery({ name: deliveryName(args[0]!, values) }),
      ),
  },
];

export const simulatorCommands: Command[] = [...routes, ...incoming, ...webhooks];
