/**
 * Unsubscribers: recipients who opted out of messages from a project.
 *
 * Rules (violations are INVALID_ARGUMENT naming the proto field path):
 * - phone: required on create, then immutable; a valid phone number written
 *   in E.164 (`+61491570156`), checked with libphonenumber-js's full
 *   metadata (a number outside every numbering plan is refused, however
 *   well-formed). Unique within the project: a second unsubscriber for the
 *   same number is ALREADY_EXISTS — enforced by a unique index, so also
 *   under concurrent creates.
 * - unsubscribe_method: settable on create only, then immutable; UNSPECIFIED
 *   means MANUAL.
 * - labels: at most 50; keys 1 to 100 characters, values at most 1000.
 * - output-only fields (name, create_time) are never taken from input.
 * - the `phone` list filter matches exactly, after normalising the filter
 *   to E.164 (`+61 491 570 156` finds `+61491570156`).
 */
import { parsePhoneNumberFromString } from "libphonenumber-js/max";
import { alreadyExists, badField, type FieldViolation, invalidArgument, notFound } from "../../api/errors.js";
import { recordCreated } from "../../api/idempotency/scope.js";
import { newResourceId } from "../../api/ids.js";
import { labelViolations } from "../../api/labels.js";
import { projectName, type ResourceRef, resourceName } from "../../api/names.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import type { Clock } from "../../clock.js";
import { isUniqueViolation } from "../../db/client.js";
import type { UnsubscribeMethodValue, UnsubscriberRow } from "../../db/schema/index.js";
import { PHONE_UNIQUE_INDEX, type UnsubscribersRepository } from "./repository.js";

export const RESOURCE_TYPE = "messaging.api.enfonica.com/Unsubscriber";
export const COLLECTION = "unsubscribers";

export type UnsubscribeMethod = UnsubscribeMethodValue;

/** What an unsubscriber created without a method gets. */
export const DEFAULT_UNSUBSCRIBE_METHOD: UnsubscribeMethod = "MANUAL";

export interface Unsubscriber {
  projectId: string;
  id: string;
  name: string;
  phone: string;
  unsubscribeMethod: UnsubscribeMethod;
  labels: Record<string, string>;
  createTime: Date;
}

export interface NewUnsubscriber {
  phone: string;
  /** undefined: DEFAULT_UNSUBSCRIBE_METHOD. */
  unsubscribeMethod: UnsubscribeMethod | undefined;
  labels: Record<string, string>;
}

export interface UnsubscriberChanges {
  labels: Record<string, string>;
}

export interface PageParams {
  pageSize: number;
  pageToken: string;
}

/** `phone` in E.164 if it is a valid number written in E.164, else undefined. */
export function parseE164(phone: string): string | undefined {
  const parsed = parsePhoneNumberFromString(phone, { extract: false });
  if (parsed === undefined || !parsed.isValid() || parsed.number !== phone) return undefined;
  return parsed.number;
}

/** `phone` (any international notation, `+` required) normalised to E.164, if it is a valid number. */
export function normaliseE164(phone: string): string | undefined {
  const parsed = parsePhoneNumberFromString(phone, { extract: false });
  if (parsed === undefined || !parsed.isValid()) return undefined;
  return parsed.number;
}

function phoneViolations(phone: string): FieldViolation[] {
  const field = "unsubscriber.phone";
  if (phone === "") return [{ field, description: "is required", reason: "required" }];
  if (parseE164(phone) === undefined) {
    return [
      {
        field,
        description: "must be a valid phone number in E.164 format, for example +61491570156",
        reason: "phone.e164",
      },
    ];
  }
  return [];
}

function toUnsubscriber(row: UnsubscriberRow): Unsubscriber {
  const ref = { projectId: row.projectId, id: row.id };
  return {
    ...ref,
    name: resourceName(COLLECTION, ref),
    phone: row.phone,
    unsubscribeMethod: row.unsubscribeMethod,
    labels: row.labels,
    createTime: row.createTime,
  };
}

const MAX_ID_ATTEMPTS = 3;

export class UnsubscribersDomain {
  constructor(
    private readonly repository: UnsubscribersRepository,
    private readonly clock: Clock,
  ) {}

  async create(projectId: string, input: NewUnsubscriber): Promise<Unsubscriber> {
    const violations = [
      ...phoneViolations(input.phone),
      ...labelViolations(input.labels, "unsubscriber.labels"),
    ];
    if (violations.length > 0) throw invalidArgument(violations);
    const now = this.clock.now();
    for (let attempt = 1; ; attempt++) {
      try {
        const id = newResourceId();
        const row = await this.repository.transaction(async (repository) => {
          const inserted = await repository.insert({
            id,
            projectId,
            phone: input.phone,
            unsubscribeMethod: input.unsubscribeMethod ?? DEFAULT_UNSUBSCRIBE_METHOD,
            labels: input.labels,
            createTime: now,
            updateTime: now,
          });
          // Idempotency-Key (src/api/idempotency/): committed with the unsubscriber.
          await recordCreated(repository.db, resourceName(COLLECTION, { projectId, id }));
          return inserted;
        });
        return toUnsubscriber(row);
      } catch (err) {
        if (isUniqueViolation(err, PHONE_UNIQUE_INDEX)) throw await this.phoneTaken(projectId, input.phone);
        // An id collision (about 2^-82) gets a new id; anything else is a defect.
        if (attempt < MAX_ID_ATTEMPTS && isUniqueViolation(err, "unsubscribers_pkey")) continue;
        throw err;
      }
    }
  }

  private async phoneTaken(projectId: string, phone: string) {
    const existing = await this.repository.findByPhone(projectId, phone);
    const name =
      existing === undefined
        ? `${projectName(projectId)}/${COLLECTION}/-`
        : resourceName(COLLECTION, existing);
    return alreadyExists(
      RESOURCE_TYPE,
      name,
      `${phone} is already an unsubscriber of ${projectName(projectId)}`,
      {
        phone,
      },
    );
  }

  async get(ref: ResourceRef): Promise<Unsubscriber> {
    const row = await this.repository.find(ref.projectId, ref.id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, resourceName(COLLECTION, ref));
    return toUnsubscriber(row);
  }

  /** The project's unsubscribers, newest first; only `phone`'s when the filter is not empty. */
  async list(projectId: string, phoneFilter: string, page: PageParams): Promise<PageResult<Unsubscriber>> {
    let phone: string | undefined;
    if (phoneFilter !== "") {
      phone = normaliseE164(phoneFilter);
      if (phone === undefined) {
        throw badField(
          "phone",
          "must be a valid phone number in E.164 format, for example +61491570156",
          "phone.e164",
        );
      }
    }
    const query = { method: "ListUnsubscribers", parent: projectName(projectId), phone: phone ?? "" };
    const result = await readPage({ ...page, query }, (after, limit) =>
      this.repository.list(projectId, phone, after, limit),
    );
    return { items: result.items.map(toUnsubscriber), nextPageToken: result.nextPageToken };
  }

  /** Changes the mutable fields of an unsubscriber (the labels). */
  async update(ref: ResourceRef, changes: UnsubscriberChanges): Promise<Unsubscriber> {
    const violations = labelViolations(changes.labels, "unsubscriber.labels");
    if (violations.length > 0) throw invalidArgument(violations);
    const row = await this.repository.updateLabels(ref.projectId, ref.id, changes.labels, this.clock.now());
    if (row === undefined) throw notFound(RESOURCE_TYPE, resourceName(COLLECTION, ref));
    return toUnsubscriber(row);
  }

  /** Deletes an unsubscriber (the number may receive messages again) and returns it. */
  async delete(ref: ResourceRef): Promise<Unsubscriber> {
    const row = await this.repository.delete(ref.projectId, ref.id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, resourceName(COLLECTION, ref));
    return toUnsubscriber(row);
  }
}
