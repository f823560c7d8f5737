/**
 * Call prices: a rate table by destination prefix (CALL_RATES), applied when
 * a call reaches a terminal state.
 *
 * - CALL_RATES: comma-separated `<prefix>=<amount per minute>`, e.g.
 *   `+61=0.05,+1=0.02`; prefix `+` and 0 to 15 digits (`+` alone matches
 *   every destination), amount a decimal with at most 9 fraction digits.
 *   Default: `+61=0.05,+1=0.02,+=0.10`.
 * - CALL_RATES_CURRENCY: the ISO 4217 code of every amount (default AUD).
 * - The longest matching prefix wins. Billing is per started minute of
 *   answer duration (61 s = 2 minutes); calls never answered cost 0. With no
 *   matching prefix the price is 0. The price is always set at the end.
 */

export interface CallRates {
  currency: string;
  /** Sorted longest prefix first. */
  entries: { prefix: string; nanosPerMinute: bigint }[];
}

export class CallRatesError extends Error {
  override name = "CallRatesError";
}

export const DEFAULT_CALL_RATES = "+61=0.05,+1=0.02,+=0.10";
export const DEFAULT_CALL_RATES_CURRENCY = "AUD";

const ENTRY = /^(\+[0-9]{0,15})=([0-9]{1,12})(?:\.([0-9]{1,9}))?$/;

/** The names a rate table's errors use (MESSAGE_RATES reuses this parser). */
export interface RateTableNames {
  rates: string;
  currency: string;
  /** What an amount is per: `minute`, `segment`. */
  per: string;
}

const CALL_NAMES: RateTableNames = { rates: "CALL_RATES", currency: "CALL_RATES_CURRENCY", per: "minute" };

export function parseCallRates(
  spec: string,
  currency: string,
  names: RateTableNames = CALL_NAMES,
): CallRates {
  if (!/^[A-Z]{3}$/.test(currency)) {
    throw new CallRatesError(
      `${names.currency} must be an ISO 4217 code such as AUD, got ${JSON.stringify(currency)}`,
    );
  }
  const entries: CallRates["entries"] = [];
  const seen = new Set<string>();
  for (const raw of spec.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    const m = ENTRY.exec(item);
    if (m === null) {
      throw new CallRatesError(
        `${names.rates} entry ${JSON.stringify(item)} must be <+prefix>=<amount per ${names.per}>, e.g. +61=0.05`,
      );
    }
    const prefix = m[1]!;
    if (seen.has(prefix)) throw new CallRatesError(`${names.rates} names ${prefix} twice`);
    seen.add(prefix);
    const nanos = BigInt(m[2]!) * 1_000_000_000n + BigInt((m[3] ?? "").padEnd(9, "0") || "0");
    entries.push({ prefix, nanosPerMinute: nanos });
  }
  entries.sort((a, b) => b.prefix.length - a.prefix.length);
  return { currency, entries };
}

export function loadCallRates(env: NodeJS.ProcessEnv): CallRates {
  return parseCallRates(
    env.CALL_RATES ?? DEFAULT_CALL_RATES,
    env.CALL_RATES_CURRENCY || DEFAULT_CALL_RATES_CURRENCY,
  );
}

/** google.type.Money as stored. */
export interface Price {
  currency: string;
  units: number;
  nanos: number;
}

/** The price of a call to `to` answered for `answerMs` milliseconds (0: not answered). */
export function priceOf(rates: CallRates, to: string, answerMs: number): Price {
  const rate = rates.entries.find((e) => to.startsWith(e.prefix));
  const minutes = BigInt(Math.ceil(Math.max(0, answerMs) / 60_000));
  const total = rate === undefined ? 0n : rate.nanosPerMinute * minutes;
  return {
    currency: rates.currency,
    units: Number(total / 1_000_000_000n),
    nanos: Number(total % 1_000_000_000n),
  };
}
