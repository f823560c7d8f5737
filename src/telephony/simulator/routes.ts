/**
 * Simulator routes: what the simulated network does with a call, by
 * destination prefix. Rules:
 * - `prefix` is `+` and up to 15 digits, or empty (every destination); one
 *   route per prefix (a taken prefix is ALREADY_EXISTS);
 * - the route whose prefix is the longest prefix of the destination wins;
 * - with no match, DEFAULT_ROUTE applies: rings 2 s, answers, the remote
 *   party speaks and hangs up after 30 s (an empty-prefix route replaces it);
 * - `ring_seconds` 0..600 (default 2), `talk_seconds` 0..86400 (default
 *   30), `digits` `^[0-9*#]{0,64}$`, `audio` SPEECH (default) or SILENCE,
 *   `outcome` ANSWER (default), BUSY, REJECT, NO_ANSWER or FAIL;
 * - `words`: what a SPEECH party says (at most 1000 characters, blanks
 *   collapsed; not with SILENCE): see media.ts;
 * - `error_code` / `error_message` only for outcomes other than ANSWER,
 *   defaulted per outcome (FAIL: `CARRIER_ERROR`).
 */
import { alreadyExists, type FieldViolation, invalidArgument, notFound } from "../../api/errors.js";
import { newResourceId } from "../../api/ids.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import type { Clock } from "../../clock.js";
import { isUniqueViolation } from "../../db/client.js";
import type { SimulatorRouteRow } from "../../db/schema/simulator.js";
import {
  DEFAULT_MESSAGE_BEHAVIOUR,
  type MessageBehaviour,
  type MessageBehaviourInput,
  type MessageOutcome,
  validateMessageBehaviour,
} from "./message-outcomes.js";
import type { SimulatorRoutesRepository } from "./repository.js";

export const SIMULATOR_ROUTE_TYPE = "admin.switchboard/SimulatorRoute";
export const ROUTE_COLLECTION = "simulator/routes";

export const OUTCOMES = ["ANSWER", "BUSY", "REJECT", "NO_ANSWER", "FAIL"] as const;
export type Outcome = (typeof OUTCOMES)[number];
export const AUDIO_KINDS = ["SPEECH", "SILENCE"] as const;
export type Audio = (typeof AUDIO_KINDS)[number];

/** A route as the simulator uses it (calls, and messages: message-outcomes.ts). */
export interface Route extends MessageBehaviour {
  /** Empty for the built-in default. */
  id: string;
  prefix: string;
  outcome: Outcome;
  ringSeconds: number;
  talkSeconds: number;
  audio: Audio;
  digits: string;
  /** What the remote party says, repeated while it talks (SPEECH); empty: unintelligible speech. */
  words: string;
  errorCode: string;
  errorMessage: string;
  createTime: Date;
}

export const DEFAULT_RING_SECONDS = 2;
export const DEFAULT_TALK_SECONDS = 30;
export const MAX_RING_SECONDS = 600;
export const MAX_TALK_SECONDS = 86_400;

/** The error code and message of each outcome that does not connect, unless the route sets them. */
export const DEFAULT_ERRORS: Readonly<Record<Exclude<Outcome, "ANSWER">, { code: string; message: string }>> =
  {
    BUSY: { code: "BUSY", message: "The called party is busy" },
    REJECT: { code: "REJECTED", message: "The called party rejected the call" },
    NO_ANSWER: { code: "NO_ANSWER", message: "The called party did not answer in time" },
    FAIL: { code: "CARRIER_ERROR", message: "The network could not deliver the call" },
  };

/** What applies when no route matches: rings 2 s, answers, speaks, hangs up after 30 s. */
export const DEFAULT_ROUTE: Readonly<Route> = Object.freeze({
  id: "",
  prefix: "",
  outcome: "ANSWER",
  ringSeconds: DEFAULT_RING_SECONDS,
  talkSeconds: DEFAULT_TALK_SECONDS,
  audio: "SPEECH",
  digits: "",
  words: "",
  errorCode: "",
  errorMessage: "",
  ...DEFAULT_MESSAGE_BEHAVIOUR,
  createTime: new Date(0),
});

/** What a create request says; undefined or empty means "the default". */
export interface RouteInput extends MessageBehaviourInput {
  prefix: string;
  outcome: Outcome | undefined;
  ringSeconds: number | undefined;
  talkSeconds: number | undefined;
  audio: Audio | undefined;
  digits: string;
  /** Undefined or empty: none. */
  words?: string | undefined;
  errorCode: string;
  errorMessage: string;
}

const PREFIX = /^(\+[0-9]{0,15})?$/;
const DIGITS = /^[0-9*#]{0,64}$/;
const ERROR_CODE = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_ERROR_MESSAGE = 500;
export const MAX_WORDS_CHARS = 1000;

/**
 * Checks `input` and fills in the defaults. `field` is the request path of
 * the route (`route`), so violations name `route.ring_seconds` and so on.
 */
export function validateRoute(input: RouteInput, field = "route"): Omit<Route, "id" | "createTime"> {
  const violations: FieldViolation[] = [];
  const at = (name: string) => (field === "" ? name : `${field}.${name}`);
  if (!PREFIX.test(input.prefix)) {
    violations.push({
      field: at("prefix"),
      description: "must be + and up to 15 digits (+6149157), or empty for every destination",
    });
  }
  if (input.outcome !== undefined && !OUTCOMES.includes(input.outcome)) {
    violations.push({ field: at("outcome"), description: `must be one of ${OUTCOMES.join(", ")}` });
  }
  const intIn = (name: string, v: number | undefined, max: number) => {
    if (v !== undefined && (!Number.isInteger(v) || v < 0 || v > max)) {
      violations.push({ field: at(name), description: `must be a whole number from 0 to ${max}` });
    }
  };
  intIn("ring_seconds", input.ringSeconds, MAX_RING_SECONDS);
  intIn("talk_seconds", input.talkSeconds, MAX_TALK_SECONDS);
  if (input.audio !== undefined && !AUDIO_KINDS.includes(input.audio)) {
    violations.push({ field: at("audio"), description: `must be one of ${AUDIO_KINDS.join(", ")}` });
  }
  if (!DIGITS.test(input.digits)) {
    violations.push({ field: at("digits"), description: "must be at most 64 of 0-9, * and #" });
  }
  const words = (input.words ?? "").trim().replace(/\s+/g, " ");
  if (words.length > MAX_WORDS_CHARS) {
    violations.push({ field: at("words"), description: `must be at most ${MAX_WORDS_CHARS} characters` });
  }
  if (words !== "" && input.audio === "SILENCE") {
    violations.push({ field: at("words"), description: "a SILENCE party says nothing: use SPEECH audio" });
  }
  const outcome = input.outcome ?? "ANSWER";
  if (outcome === "ANSWER") {
    if (input.errorCode !== "") {
      violations.push({ field: at("error_code"), description: "only outcomes other than ANSWER have one" });
    }
    if (input.errorMessage !== "") {
      violations.push({
        field: at("error_message"),
        description: "only outcomes other than ANSWER have one",
      });
    }
  } else {
    if (input.errorCode !== "" && !ERROR_CODE.test(input.errorCode)) {
      violations.push({
        field: at("error_code"),
        description: "must be 1 to 64 letters, digits, _, . or -",
      });
    }
    if (input.errorMessage.length > MAX_ERROR_MESSAGE) {
      violations.push({
        field: at("error_message"),
        description: `must be at most ${MAX_ERROR_MESSAGE} characters`,
      });
    }
  }
  const messages = validateMessageBehaviour(input, at, violations);
  if (violations.length > 0) throw invalidArgument(violations);
  const defaults = outcome === "ANSWER" ? { code: "", message: "" } : DEFAULT_ERRORS[outcome];
  return {
    prefix: input.prefix,
    outcome,
    ringSeconds: input.ringSeconds ?? DEFAULT_RING_SECONDS,
    talkSeconds: input.talkSeconds ?? DEFAULT_TALK_SECONDS,
    audio: input.audio ?? "SPEECH",
    digits: input.digits,
    words,
    errorCode: input.errorCode || defaults.code,
    errorMessage: input.errorMessage || defaults.message,
    ...messages,
  };
}

/** The route for `to` among `routes`: the longest matching prefix, else DEFAULT_ROUTE. */
export function longestPrefixMatch(routes: Iterable<Route>, to: string): Route {
  let best: Route | undefined;
  for (const r of routes) {
    if (to.startsWith(r.prefix) && (best === undefined || r.prefix.length > best.prefix.length)) best = r;
  }
  return best ?? DEFAULT_ROUTE;
}

/** Where the simulator looks up routes. */
export interface RouteSource {
  /** The route a call to `to` takes (DEFAULT_ROUTE when none matches). */
  resolve(to: string): Promise<Route>;
}

export function routeFromRow(row: SimulatorRouteRow): Route {
  return {
    id: row.id,
    prefix: row.prefix,
    outcome: row.outcome as Outcome,
    ringSeconds: row.ringSeconds,
    talkSeconds: row.talkSeconds,
    audio: row.audio as Audio,
    digits: row.digits,
    words: row.words,
    errorCode: row.errorCode,
    errorMessage: row.errorMessage,
    messageOutcome: row.messageOutcome as MessageOutcome,
    messageDeliverSeconds: row.messageDeliverSeconds,
    messageErrorCode: row.messageErrorCode,
    messageErrorMessage: row.messageErrorMessage,
    createTime: row.createTime,
  };
}

export class SimulatorRoutes implements RouteSource {
  constructor(
    private readonly repo: SimulatorRoutesRepository,
    private readonly clock: Clock,
  ) {}

  async create(input: RouteInput): Promise<Route> {
    const route = validateRoute(input);
    const id = newResourceId();
    try {
      return routeFromRow(await this.repo.insert({ id, ...route, createTime: this.clock.now() }));
    } catch (err) {
      if (!isUniqueViolation(err, "simulator_routes_prefix_key")) throw err;
      const taken = await this.repo.findByPrefix(route.prefix);
      const name = taken === undefined ? "" : `${ROUTE_COLLECTION}/${taken.id}`;
      throw alreadyExists(
        SIMULATOR_ROUTE_TYPE,
        name,
        `a route for prefix ${JSON.stringify(route.prefix)} exists${name ? ` (${name})` : ""}; delete it first`,
        { prefix: route.prefix },
      );
    }
  }

  async get(id: string): Promise<Route> {
    const row = await this.repo.get(id);
    if (row === undefined) throw notFound(SIMULATOR_ROUTE_TYPE, `${ROUTE_COLLECTION}/${id}`);
    return routeFromRow(row);
  }

  async list(pageSize: number, pageToken: string): Promise<PageResult<Route>> {
    const page = await readPage({ pageSize, pageToken, query: { method: "ListRoutes" } }, (after, limit) =>
      this.repo.list(after, limit),
    );
    return { items: page.items.map(routeFromRow), nextPageToken: page.nextPageToken };
  }

  async delete(id: string): Promise<void> {
    if (!(await this.repo.delete(id))) throw notFound(SIMULATOR_ROUTE_TYPE, `${ROUTE_COLLECTION}/${id}`);
  }

  async resolve(to: string): Promise<Route> {
    const row = await this.repo.longestMatch(to);
    return row === undefined ? DEFAULT_ROUTE : routeFromRow(row);
  }
}
