/**
 * Update masks for every Update method (AIP-134), driven by the
 * `google.api.field_behavior` annotations of the resource message:
 *
 * - `update_mask` names the fields to change, by proto name, dot-separated
 *   into singular message fields (`display_name`, `address.locality`). A path
 *   that names no field is INVALID_ARGUMENT naming `update_mask`.
 * - No mask (or an empty one): every field populated (non-default) in the
 *   request's resource.
 * - `*` (alone): full replacement of every updatable field — fields absent
 *   from the request are cleared. Immutable fields absent from the request
 *   are kept (omitting them is not an attempt to change them).
 * - OUTPUT_ONLY fields (and the `name` identifier) are ignored wherever they
 *   appear: in the request or in the mask.
 * - An IMMUTABLE field (or a field inside one) whose requested value differs
 *   from the current one is INVALID_ARGUMENT naming it
 *   (`regulatory_listing.address`); sending the current value is fine.
 */
import {
  clone,
  create,
  type DescField,
  type DescMessage,
  equals,
  getOption,
  type MessageShape,
} from "@bufbuild/protobuf";
import { type ReflectMessage, reflect } from "@bufbuild/protobuf/reflect";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { badField, type FieldViolation, invalidArgument } from "./errors.js";

const UPDATE_MASK_FIELD = "update_mask";

export interface UpdateMaskInput<Desc extends DescMessage> {
  /** The resource message type. */
  schema: Desc;
  /** The stored resource, as the API shows it. */
  current: MessageShape<Desc>;
  /** The resource as sent in the update request. */
  patch: MessageShape<Desc>;
  /** The request's `update_mask`. */
  mask: FieldMask | undefined;
  /** Path of the resource in the request, for errors: `regulatory_listing`. */
  resourceField: string;
}

export interface UpdateMaskResult<Desc extends DescMessage> {
  /** `current` with the requested changes applied. */
  resource: MessageShape<Desc>;
  /** The paths that were applied (immutable fields sent unchanged and ignored fields excluded). */
  applied: string[];
}

function behaviors(field: DescField): FieldBehavior[] {
  return getOption(field, field_behavior);
}

function isOutputOnly(field: DescField): boolean {
  return behaviors(field).includes(FieldBehavior.OUTPUT_ONLY);
}

function isImmutable(field: DescField): boolean {
  return behaviors(field).includes(FieldBehavior.IMMUTABLE);
}

/** Fields never written through an update: the resource name and output-only fields. */
function isIgnored(field: DescField, depth: number): boolean {
  return (
    isOutputOnly(field) ||
    (depth === 0 && (field.name === "name" || behaviors(field).includes(FieldBehavior.IDENTIFIER)))
  );
}

/** Resolves a mask path to its field chain, or undefined when it names no field. */
function resolvePath(schema: DescMessage, path: string): DescField[] | undefined {
  const chain: DescField[] = [];
  let message: DescMessage | undefined = schema;
  for (const segment of path.split(".")) {
    if (message === undefined) return undefined;
    const field: DescField | undefined = message.fields.find((f) => f.name === segment);
    if (field === undefined) return undefined;
    chain.push(field);
    message = field.fieldKind === "message" ? field.message : undefined;
  }
  return chain;
}

/** The message holding the last field of `chain`, creating parents when `create` is set. */
function parentOf(
  root: ReflectMessage,
  chain: DescField[],
  createParents: boolean,
): ReflectMessage | undefined {
  let r = root;
  for (const field of chain.slice(0, -1)) {
    if (field.fieldKind !== "message") return undefined;
    if (!r.isSet(field)) {
      if (!createParents) return undefined;
      r.set(field, reflect(field.message, create(field.message)));
    }
    r = r.get(field) as ReflectMessage;
  }
  return r;
}

/** Whether the value at `chain` is the same in `a` and `b` (unset parents count as unset). */
function sameValue(a: ReflectMessage, b: ReflectMessage, chain: DescField[]): boolean {
  const leaf = chain[chain.length - 1]!;
  const pa = parentOf(a, chain, false);
  const pb = parentOf(b, chain, false);
  const holder = leaf.parent;
  const ca = reflect(holder, create(holder));
  const cb = reflect(holder, create(holder));
  if (pa?.isSet(leaf)) ca.set(leaf, pa.get(leaf));
  if (pb?.isSet(leaf)) cb.set(leaf, pb.get(leaf));
  return equals(holder, ca.message, cb.message);
}

function isSetAt(root: ReflectMessage, chain: DescField[]): boolean {
  const parent = parentOf(root, chain, false);
  return parent?.isSet(chain[chain.length - 1]!) ?? false;
}

interface MaskPlan {
  /** implied: no mask (every populated field); full: `*`; paths: the resolved paths of the mask. */
  kind: "implied" | "full" | "paths";
  paths: { path: string; chain: DescField[] }[];
}

function planMask(schema: DescMessage, mask: FieldMask | undefined): MaskPlan {
  const paths = mask?.paths ?? [];
  if (paths.length === 0) return { kind: "implied", paths: [] };
  if (paths.includes("*")) {
    if (paths.length > 1) {
      throw badField(UPDATE_MASK_FIELD, "`*` must be the only path of the mask", "update_mask.wildcard");
    }
    return { kind: "full", paths: schema.fields.map((f) => ({ path: f.name, chain: [f] })) };
  }
  const resolved: MaskPlan["paths"] = [];
  const seen = new Set<string>();
  for (const path of paths) {
    const chain = resolvePath(schema, path);
    if (chain === undefined) {
      throw badField(
        UPDATE_MASK_FIELD,
        `unknown field path ${JSON.stringify(path)}`,
        "update_mask.unknown_path",
      );
    }
    if (!seen.has(path)) resolved.push({ path, chain });
    seen.add(path);
  }
  return { kind: "paths", paths: resolved };
}

/**
 * Checks the mask alone (every path names a field of `schema`; `*` alone):
 * call it before looking the resource up, so a bad request is
 * INVALID_ARGUMENT whether or not the resource exists.
 */
export function checkUpdateMask(schema: DescMessage, mask: FieldMask | undefined): void {
  planMask(schema, mask);
}

/** Applies `patch` to `current` as the update mask says; throws INVALID_ARGUMENT on a bad mask or change. */
export function applyUpdateMask<Desc extends DescMessage>(
  input: UpdateMaskInput<Desc>,
): UpdateMaskResult<Desc> {
  const { schema, resourceField } = input;
  const patch = reflect(schema, clone(schema, input.patch));
  const result = reflect(schema, clone(schema, input.current));
  const current = reflect(schema, input.current);
  const plan = planMask(schema, input.mask);
  const fullReplacement = plan.kind === "full";
  const requested =
    plan.kind === "implied"
      ? schema.fields.filter((f) => patch.isSet(f)).map((f) => ({ path: f.name, chain: [f] }))
      : plan.paths;

  const violations: FieldViolation[] = [];
  const applied: string[] = [];
  for (const { path, chain } of requested) {
    if (chain.some((f, depth) => isIgnored(f, depth))) continue;
    if (chain.some(isImmutable)) {
      if (fullReplacement && !isSetAt(patch, chain)) continue;
      if (!sameValue(current, patch, chain)) {
        violations.push({
          field: `${resourceField}.${path}`,
          description: "the field is immutable; it cannot change after creation",
          reason: "field.immutable",
        });
      }
      continue;
    }
    const leaf = chain[chain.length - 1]!;
    const from = parentOf(patch, chain, false);
    if (from?.isSet(leaf)) {
      parentOf(result, chain, true)!.set(leaf, from.get(leaf));
    } else {
      parentOf(result, chain, false)?.clear(leaf);
    }
    applied.push(path);
  }
  if (violations.length > 0) throw invalidArgument(violations);
  return { resource: result.message as MessageShape<Desc>, applied };
}
