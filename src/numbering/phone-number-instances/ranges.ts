/**
 * Ranges: contiguous numbers managed by a primary instance (the first
 * number). SplitRange keeps the first `size` numbers in the original range
 * and makes a new range of the rest: a range of 100 split with size 20
 * gives 20 (the original, same name) and 80 (a new instance whose primary
 * number is the 21st). `size` must be 1 to the range's size minus 1; a
 * single number is not a range and cannot be split.
 */
import { badField, failedPrecondition } from "../../api/errors.js";
import { addToNumber } from "../numbers.js";

/** The most numbers one range may hold when provisioned. */
export const MAX_RANGE_SIZE = 10_000;

export interface RangeSpan {
  start: string;
  end: string;
  size: number;
}

export interface SplitPlan {
  first: RangeSpan;
  second: RangeSpan;
}

/** How a range of `span` splits keeping `size`; throws for a single number or a bad size. */
export function planSplit(name: string, span: RangeSpan | undefined, size: number): SplitPlan {
  if (span === undefined) {
    throw failedPrecondition(
      "NOT_A_RANGE",
      `${name} is a single number, not a range; only ranges can be split`,
      {
        phone_number_instance: name,
      },
    );
  }
  if (span.size < 2) {
    throw failedPrecondition("RANGE_TOO_SMALL", `${name} holds a single number; it cannot be split further`, {
      phone_number_instance: name,
    });
  }
  if (!Number.isInteger(size) || size < 1 || size > span.size - 1) {
    throw badField(
      "size",
      `must be 1 to ${span.size - 1}: the numbers to keep in the range of ${span.size}`,
      "split.size",
    );
  }
  const firstEnd = addToNumber(span.start, size - 1)!;
  const secondStart = addToNumber(span.start, size)!;
  return {
    first: { start: span.start, end: firstEnd, size },
    second: { start: secondStart, end: span.end, size: span.size - size },
  };
}
