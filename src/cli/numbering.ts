/**
 * Commands for numbering: the inventory (number blocks, search), a project's
 * phone number instances with the operator's actions on them (range
 * provisioning, port-in, suspension), and the review of regulatory listings.
 */
import {
  ListPhoneNumberInstancesResponseSchema,
  PhoneNumberInstanceSchema,
  PhoneNumberInstances,
} from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import {
  PhoneNumber_PhoneNumberCapabilitySchema,
  PhoneNumber_PhoneNumberTypeSchema,
  PhoneNumbers,
  SearchPhoneNumbersResponseSchema,
} from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import {
  ListRegulatoryListingsResponseSchema,
  RegulatoryListingSchema,
  RegulatoryListings,
} from "../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { NumberBlockSchema, NumberingAdmin } from "../../gen/switchboard/admin/v1/numbering_pb.js";
import {
  bool,
  childName,
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
  strs,
} from "./args.js";
import { type Command, type OptionSpec, UsageError, type Values } from "./command.js";
import { col, idCol } from "./output.js";

const TYPES = enumNames(PhoneNumber_PhoneNumberTypeSchema).join(", ");
const CAPABILITIES = enumNames(PhoneNumber_PhoneNumberCapabilitySchema).join(", ");

const numberColumns = [
  col("NUMBER", "phoneNumber"),
  col("TYPE", "numberType"),
  col("CAPABILITIES", "capabilities"),
  col("COUNTRY", "countryCode"),
  col("SKU", "sku"),
];

const inventory: Command[] = [
  {
    path: ["inventory", "add-block"],
    summary: "Add a block of contiguous numbers to the inventory (idempotent)",
    args: ["<start-number>"],
    options: {
      size: { type: "string", value: "N", description: "how many numbers, 1 to 100000 (required)" },
      type: { type: "string", value: "TYPE", description: `the kind of number (required): ${TYPES}` },
      capability: {
        type: "string",
        multiple: true,
        value: "CAP",
        description: `what the numbers support (repeatable, required): ${CAPABILITIES}`,
      },
      country: { type: "string", value: "CC", description: "ISO 3166-1 alpha-2 country, e.g. AU (required)" },
      sku: { type: "string", value: "SKU", description: "recurring price SKU (default <CC>-<TYPE>-MONTHLY)" },
      "activation-sku": {
        type: "string",
        value: "SKU",
        description: "activation price SKU (default <CC>-<TYPE>-ACTIVATION)",
      },
    },
    examples: [
      "switchboard inventory add-block +61255501000 --size 100 --type LOCAL --capability VOICE --country AU",
    ],
    async run({ args, values, client }) {
      const size = int(values, "size", 1, 100_000);
      const type = str(values, "type");
      const capabilities = strs(values, "capability");
      const country = str(values, "country");
      if (size === undefined || !type || capabilities.length === 0 || !country) {
        throw new UsageError("give --size, --type, --capability and --country", "inventory add-block");
      }
      const block = await client.of(NumberingAdmin).createNumberBlock({
        numberBlock: {
          startPhoneNumber: args[0]!,
          size,
          numberType: enumValue(PhoneNumber_PhoneNumberTypeSchema, type, "--type"),
          capabilities: capabilities.map((c) =>
            enumValue(PhoneNumber_PhoneNumberCapabilitySchema, c, "--capability"),
          ),
          countryCode: country,
          sku: str(values, "sku") ?? "",
          activationSku: str(values, "activation-sku") ?? "",
        },
      });
      return resource(NumberBlockSchema, block);
    },
  },
  {
    path: ["inventory", "search"],
    summary: "Search the inventory for available numbers (first 100 unless --limit)",
    options: {
      country: { type: "string", value: "CC", description: "ISO 3166-1 alpha-2 country, e.g. AU (required)" },
      type: { type: "string", value: "TYPE", description: `only this kind: ${TYPES}` },
      prefix: { type: "string", value: "PREFIX", description: "only numbers starting with it (+612555)" },
      voice: { type: "boolean", description: "only numbers supporting voice" },
      sms: { type: "boolean", description: "only numbers supporting SMS" },
      mms: { type: "boolean", description: "only numbers supporting MMS" },
      ...LIST_OPTIONS,
    },
    examples: ["switchboard inventory search --country AU --type LOCAL --prefix +612555 --voice"],
    run({ values, client }) {
      const country = str(values, "country");
      if (!country) throw new UsageError("give --country", "inventory search");
      const type = str(values, "type");
      return listPages(
        SearchPhoneNumbersResponseSchema,
        "phoneNumbers",
        { limit: "100", ...values },
        (pageSize, pageToken) =>
          client.of(PhoneNumbers).searchPhoneNumbers({
            pageSize,
            pageToken,
            countryCode: country,
            numberType: type ? enumValue(PhoneNumber_PhoneNumberTypeSchema, type, "--type") : 0,
            prefix: str(values, "prefix") ?? "",
            supportsVoice: flag(values, "voice"),
            supportsSms: flag(values, "sms"),
            supportsMms: flag(values, "mms"),
          }),
        numberColumns,
      );
    },
  },
];

const LISTING_OPTION: Record<string, OptionSpec> = {
  listing: {
    type: "string",
    value: "LISTING",
    description: "a regulatory listing of the project to attach (id or full name)",
  },
};

function listingName(values: Values, project: string): string {
  const listing = str(values, "listing");
  if (!listing) return "";
  return listing.startsWith("projects/") ? listing : `${project}/regulatoryListings/${listing}`;
}

const instanceColumns = [
  idCol("INSTANCE"),
  col("NUMBER", "phoneNumber.phoneNumber"),
  { header: "RANGE END", value: (i: { range?: { endPhoneNumber?: string } }) => i.range?.endPhoneNumber },
  col("STATE", "lifecycleState"),
  col("COMPLIANT", "compliant"),
  col("DISPLAY NAME", "displayName"),
  col("CREATED", "createTime"),
];

const instanceName = (arg: string, values: Values) => childName(arg, "phoneNumberInstances", values);

const operatorActions = [
  ["complete-port-in", "Complete a pending port-in: the instance becomes ACTIVE", "completePortIn"],
  [
    "suspend",
    "Suspend an ACTIVE instance (calls and messages to it are refused)",
    "suspendPhoneNumberInstance",
  ],
  ["resume", "Resume a SUSPENDED instance", "resumePhoneNumberInstance"],
] as const;

const numbers: Command[] = [
  {
    path: ["numbers", "list"],
    summary: "List a project's phone number instances, newest first",
    args: ["<project>"],
    options: {
      prefix: {
        type: "string",
        value: "PREFIX",
        description: "only instances holding a number starting with it",
      },
      "include-deleted": { type: "boolean", description: "include deleted instances" },
      ...LIST_OPTIONS,
    },
    examples: ["switchboard numbers list acme --prefix +612555"],
    run: ({ args, values, client }) =>
      listPages(
        ListPhoneNumberInstancesResponseSchema,
        "phoneNumberInstances",
        values,
        (pageSize, pageToken) =>
          client.of(PhoneNumberInstances).listPhoneNumberInstances({
            parent: projectName(args[0]!),
            pageSize,
            pageToken,
            prefix: str(values, "prefix") ?? "",
            includeDeleted: flag(values, "include-deleted"),
          }),
        instanceColumns,
      ),
  },
  {
    path: ["numbers", "get"],
    summary: "Show a phone number instance",
    args: ["<instance>"],
    options: PROJECT_OPTION,
    examples: [
      "switchboard numbers get projects/acme/phoneNumberInstances/61255501000",
      "switchboard numbers get 61255501000 --project acme",
    ],
    run: async ({ args, values, client }) =>
      resource(
        PhoneNumberInstanceSchema,
        await client
          .of(PhoneNumberInstances)
          .getPhoneNumberInstance({ name: instanceName(args[0]!, values) }),
      ),
  },
  {
    path: ["numbers", "provision-range"],
    summary: "Provision contiguous inventory numbers to a project as one range",
    args: ["<project>", "<start-number>"],
    options: {
      size: { type: "string", value: "N", description: "how many numbers, 1 to 10000 (required)" },
      ...LISTING_OPTION,
    },
    examples: ["switchboard numbers provision-range acme +61255501000 --size 20"],
    async run({ args, values, client }) {
      const size = int(values, "size", 1, 10_000);
      if (size === undefined) throw new UsageError("give --size", "numbers provision-range");
      const parent = projectName(args[0]!);
      const instance = await client.of(NumberingAdmin).provisionPhoneNumberRange({
        parent,
        startPhoneNumber: args[1]!,
        size,
        regulatoryListing: listingName(values, parent),
      });
      return resource(PhoneNumberInstanceSchema, instance);
    },
  },
  {
    path: ["numbers", "port-in"],
    summary: "Register the port-in of a number from another carrier (PENDING until complete-port-in)",
    args: ["<project>", "<number>"],
    options: LISTING_OPTION,
    examples: ["switchboard numbers port-in acme +61298765432"],
    async run({ args, values, client }) {
      const parent = projectName(args[0]!);
      const instance = await client.of(NumberingAdmin).portInPhoneNumber({
        parent,
        phoneNumber: args[1]!,
        regulatoryListing: listingName(values, parent),
      });
      return resource(PhoneNumberInstanceSchema, instance);
    },
  },
  ...operatorActions.map(
    ([verb, summary, method]): Command => ({
      path: ["numbers", verb],
      summary,
      args: ["<instance>"],
      options: PROJECT_OPTION,
      examples: [`switchboard numbers ${verb} 61298765432 --project acme`],
      run: async ({ args, values, client }) =>
        resource(
          PhoneNumberInstanceSchema,
          await client.of(NumberingAdmin)[method]({ name: instanceName(args[0]!, values) }),
        ),
    }),
  ),
];

const listingName2 = (arg: string, values: Values) => childName(arg, "regulatoryListings", values);

const listings: Command[] = [
  {
    path: ["listings", "list"],
    summary: "List a project's regulatory listings, newest first",
    args: ["<project>"],
    options: LIST_OPTIONS,
    examples: ["switchboard listings list acme"],
    run: ({ args, values, client }) =>
      listPages(
        ListRegulatoryListingsResponseSchema,
        "regulatoryListings",
        values,
        (pageSize, pageToken) =>
          client
            .of(RegulatoryListings)
            .listRegulatoryListings({ parent: projectName(args[0]!), pageSize, pageToken }),
        [
          idCol("LISTING"),
          col("DISPLAY NAME", "displayName"),
          col("REGION", "address.regionCode"),
          col("VALID", "valid"),
          col("VERIFIED", "verified"),
          col("CREATED", "createTime"),
        ],
      ),
  },
  {
    path: ["listings", "get"],
    summary: "Show a regulatory listing",
    args: ["<listing>"],
    options: PROJECT_OPTION,
    examples: ["switchboard listings get projects/acme/regulatoryListings/l1"],
    run: async ({ args, values, client }) =>
      resource(
        RegulatoryListingSchema,
        await client.of(RegulatoryListings).getRegulatoryListing({ name: listingName2(args[0]!, values) }),
      ),
  },
  {
    path: ["listings", "review"],
    summary: "Record the outcome of a listing's manual review",
    args: ["<listing>"],
    options: {
      valid: {
        type: "string",
        value: "true|false",
        description: "whether the information was found accurate",
      },
      verified: { type: "string", value: "true|false", description: "whether the identity was verified" },
      ...PROJECT_OPTION,
    },
    description:
      "A field left out keeps its value; the `compliant` of every instance using the listing follows.",
    examples: ["switchboard listings review l1 --project acme --valid true --verified true"],
    async run({ args, values, client }) {
      const valid = bool(values, "valid");
      const verified = bool(values, "verified");
      if (valid === undefined && verified === undefined) {
        throw new UsageError("give --valid or --verified", "listings review");
      }
      const listing = await client.of(NumberingAdmin).reviewRegulatoryListing({
        name: listingName2(args[0]!, values),
        ...(valid === undefined ? {} : { valid }),
        ...(verified === undefined ? {} : { verified }),
      });
      return resource(RegulatoryListingSchema, listing);
    },
  },
];

export const numberingCommands: Command[] = [...inventory, ...numbers, ...listings];
