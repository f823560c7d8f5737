/**
 * The number inventory: the numbers the operator has loaded and that
 * projects can provision.
 *
 * Blocks (admin CreateNumberBlock): `size` contiguous numbers from
 * `start_phone_number`, all with the same country, type, capabilities and
 * SKUs. Rules (INVALID_ARGUMENT naming `number_block.<field>`):
 * - start_phone_number: E.164, a valid number (libphonenumber) of
 *   `country_code`; the last number likewise, with as many digits;
 * - size: 1 to MAX_BLOCK_SIZE;
 * - country_code: a known ISO 3166-1 alpha-2 region; number_type: set;
 *   capabilities: at least one;
 * - sku / activation_sku: optional; by default `<CC>-<TYPE>-MONTHLY` and
 *   `<CC>-<TYPE>-ACTIVATION` (`AU-LOCAL-MONTHLY`, `AU-TOLL-FREE-ACTIVATION`).
 * Adding a block is idempotent: numbers already in inventory take the
 * block's attributes (numbers already provisioned keep what their instance
 * copied when it was created).
 *
 * Search (SearchPhoneNumbers): numbers of one country, optionally of one
 * type, starting with a prefix (national digits with the leading 0
 * stripped, or E.164) and having every requested capability; ordered by
 * number; only free numbers — not held by an instance and not in quarantine
 * after a delete (see `phone-number-instances/changes.ts`).
 */
import { badField, type FieldViolation, invalidArgument } from "../../api/errors.js";
import { readKeyPage } from "../../api/key-pagination.js";
import type { PageResult } from "../../api/pagination.js";
import type { Clock } from "../../clock.js";
import type { InventoryNumberRow } from "../../db/schema/index.js";
import { type NumberType, numberFacts, rangeEnd, searchPrefix } from "../numbers.js";
import { isRegionCode } from "../regulatory-listings/domain.js";
import type { InventoryRepository } from "./repository.js";

export const PHONE_NUMBER_TYPE = "numbering.api.enfonica.com/PhoneNumber";

/** The most numbers one CreateNumberBlock adds. */
export const MAX_BLOCK_SIZE = 100_000;

export type Capability = "VOICE" | "SMS" | "MMS";

/** A number of the inventory, as PhoneNumber shows it. */
export interface InventoryNumber {
  phoneNumber: string;
  countryCode: string;
  numberType: NumberType;
  capabilities: Capability[];
  sku: string;
  activationSku: string;
}

export interface NewBlock {
  startPhoneNumber: string;
  size: number;
  countryCode: string;
  numberType: NumberType | undefined;
  capabilities: Capability[];
  sku: string;
  activationSku: string;
}

export interface Block extends InventoryNumber {
  endPhoneNumber: string;
  size: number;
}

export interface SearchParams {
  countryCode: string;
  numberType: NumberType | undefined;
  prefix: string;
  supportsVoice: boolean;
  supportsSms: boolean;
  supportsMms: boolean;
  pageSize: number;
  pageToken: string;
}

/** The default SKUs of a number: `AU-LOCAL-MONTHLY`, `AU-LOCAL-ACTIVATION`. */
export function defaultSkus(
  countryCode: string,
  numberType: NumberType,
): { sku: string; activationSku: string } {
  const base = `${countryCode}-${numberType.replace(/_/g, "-")}`;
  return { sku: `${base}-MONTHLY`, activationSku: `${base}-ACTIVATION` };
}

export function capabilitiesOf(row: { voice: boolean; sms: boolean; mms: boolean }): Capability[] {
  const out: Capability[] = [];
  if (row.sms) out.push("SMS");
  if (row.mms) out.push("MMS");
  if (row.voice) out.push("VOICE");
  return out;
}

export function toInventoryNumber(row: InventoryNumberRow): InventoryNumber {
  return {
    phoneNumber: row.phoneNumber,
    countryCode: row.countryCode,
    numberType: row.numberType,
    capabilities: capabilitiesOf(row),
    sku: row.sku,
    activationSku: row.activationSku,
  };
}

const F = {
  start: "number_block.start_phone_number",
  size: "number_block.size",
  countryCode: "number_block.country_code",
  numberType: "number_block.number_type",
  capabilities: "number_block.capabilities",
} as const;

function blockViolations(block: NewBlock): { violations: FieldViolation[]; end: string | undefined } {
  const violations: FieldViolation[] = [];
  const regionOk = isRegionCode(block.countryCode);
  if (!regionOk) {
    violations.push({
      field: F.countryCode,
      description: "must be a known ISO 3166-1 alpha-2 region code, capitalised (for example AU)",
      reason: "region_code.unknown",
    });
  }
  if (block.numberType === undefined) {
    violations.push({ field: F.numberType, description: "a number type is required", reason: "required" });
  }
  if (block.capabilities.length === 0) {
    violations.push({
      field: F.capabilities,
      description: "at least one capability is required",
      reason: "required",
    });
  }
  const sizeOk = Number.isInteger(block.size) && block.size >= 1 && block.size <= MAX_BLOCK_SIZE;
  if (!sizeOk) {
    violations.push({ field: F.size, description: `must be 1 to ${MAX_BLOCK_SIZE}`, reason: "int32.range" });
  }
  const start = numberFacts(block.startPhoneNumber);
  if (start === undefined) {
    violations.push({
      field: F.start,
      description: "must be a valid phone number in E.164 format, for example +61255501000",
      reason: "phone.e164",
    });
    return { violations, end: undefined };
  }
  if (regionOk && start.country !== block.countryCode) {
    violations.push({
      field: F.start,
      description: `is a number of ${start.country}, not of ${block.countryCode}`,
      reason: "phone.country",
    });
  }
  if (!sizeOk) return { violations, end: undefined };
  const end = rangeEnd(block.startPhoneNumber, block.size);
  const endFacts = end === undefined ? undefined : numberFacts(end);
  if (end === undefined || endFacts === undefined || endFacts.country !== start.country) {
    violations.push({
      field: F.size,
      description: `the block would run past the numbers of ${start.country} valid after ${block.startPhoneNumber}`,
      reason: "number_block.end",
    });
  }
  return { violations, end };
}

export class InventoryDomain {
  constructor(
    private readonly repository: InventoryRepository,
    private readonly clock: Clock,
  ) {}

  /** Adds (or updates) a block of numbers; see the file comment. */
  async addBlock(block: NewBlock, onConflict: "update" | "keep" = "update"): Promise<Block> {
    const { violations, end } = blockViolations(block);
    if (violations.length > 0 || end === undefined || block.numberType === undefined) {
      throw invalidArgument(violations);
    }
    const skus = defaultSkus(block.countryCode, block.numberType);
    const capabilities = [...new Set(block.capabilities)];
    const attributes = {
      countryCode: block.countryCode,
      numberType: block.numberType,
      voice: capabilities.includes("VOICE"),
      sms: capabilities.includes("SMS"),
      mms: capabilities.includes("MMS"),
      sku: block.sku === "" ? skus.sku : block.sku,
      activationSku: block.activationSku === "" ? skus.activationSku : block.activationSku,
    };
    await this.repository.upsertBlock(
      block.startPhoneNumber,
      block.size,
      attributes,
      this.clock.now(),
      onConflict,
    );
    return {
      phoneNumber: block.startPhoneNumber,
      endPhoneNumber: end,
      size: block.size,
      countryCode: attributes.countryCode,
      numberType: attributes.numberType,
      capabilities: capabilitiesOf(attributes),
      sku: attributes.sku,
      activationSku: attributes.activationSku,
    };
  }

  /** How many numbers of a block (`start` and the `size - 1` after it) inventory holds. */
  countBlock(start: string, size: number): Promise<number> {
    return this.repository.countBlock(start, size);
  }

  /** Free numbers matching the search, in number order. */
  async search(params: SearchParams): Promise<PageResult<InventoryNumber>> {
    if (!isRegionCode(params.countryCode)) {
      throw badField(
        "country_code",
        "must be a known ISO 3166-1 alpha-2 region code, capitalised (for example AU)",
        "region_code.unknown",
      );
    }
    const prefix = searchPrefix(params.countryCode, params.prefix);
    const query = {
      method: "SearchPhoneNumbers",
      country_code: params.countryCode,
      number_type: params.numberType ?? "",
      prefix,
      voice: params.supportsVoice,
      sms: params.supportsSms,
      mms: params.supportsMms,
    };
    const now = this.clock.now();
    const result = await readKeyPage(
      { pageSize: params.pageSize, pageToken: params.pageToken, query },
      (row: InventoryNumberRow) => row.phoneNumber,
      (after, limit) =>
        this.repository.search(
          {
            countryCode: params.countryCode,
            numberType: params.numberType,
            prefix,
            voice: params.supportsVoice,
            sms: params.supportsSms,
            mms: params.supportsMms,
            now,
          },
          after,
          limit,
        ),
    );
    return { items: result.items.map(toInventoryNumber), nextPageToken: result.nextPageToken };
  }
}
