/**
 * Message prices: a rate table by destination prefix (MESSAGE_RATES), as for
 * calls (src/voice/calls/rates.ts, same syntax), per segment.
 *
 * - MESSAGE_RATES: comma-separated `<prefix>=<amount per segment>`, e.g.
 *   `+61=0.05,+1=0.01`; the longest matching prefix wins; no match costs 0.
 *   Default: `+61=0.05,+1=0.01,+=0.08`.
 * - MESSAGE_RATES_CURRENCY: the ISO 4217 code of every amount (default AUD).
 * - The price of an outgoing message is the rate of `to` times its segment
 *   count, set when the message is created (the carrier is charged per
 *   segment submitted, delivered or not); incoming messages have no price.
 */
import { type CallRates, type Price, parseCallRates } from "../../voice/calls/rates.js";

export type MessageRates = CallRates;

export const DEFAULT_MESSAGE_RATES = "+61=0.05,+1=0.01,+=0.08";
export const DEFAULT_MESSAGE_RATES_CURRENCY = "AUD";

/** Throws CallRatesError (a configuration error) for a malformed table. */
export function loadMessageRates(env: NodeJS.ProcessEnv): MessageRates {
  return parseCallRates(
    env.MESSAGE_RATES ?? DEFAULT_MESSAGE_RATES,
    env.MESSAGE_RATES_CURRENCY || DEFAULT_MESSAGE_RATES_CURRENCY,
    { rates: "MESSAGE_RATES", currency: "MESSAGE_RATES_CURRENCY", per: "segment" },
  );
}

/** The price of `segments` segments to `to`. */
export function messagePrice(rates: MessageRates, to: string, segments: number): Price {
  const rate = rates.entries.find((e) => to.startsWith(e.prefix));
  const total = rate === undefined ? 0n : rate.nanosPerMinute * BigInt(segments);
  return {
    currency: rates.currency,
    units: Number(total / 1_000_000_000n),
    nanos: Number(total % 1_000_000_000n),
  };
}
