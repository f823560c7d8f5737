/**
 * Safe XML reading for VoiceML: fast-xml-parser configured so that a handler's response cannot
 * expand entities (no DTD at all, only the five XML builtin entities and character references),
 * cannot exhaust memory (size, depth bounds) and cannot make the parser throw out of
 * `parseVoiceMl`. Produces a small, typed element tree.
 */
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { MARKUP_LIMITS, type MarkupErrorCode } from "./types.js";

export interface XmlElement {
  readonly type: "element";
  readonly name: string;
  /** Attributes in document order, names as written. */
  readonly attributes: readonly (readonly [string, string])[];
  readonly children: readonly XmlNode[];
}

export interface XmlText {
  readonly type: "text";
  readonly text: string;
}

export type XmlNode = XmlElement | XmlText;

/** An error with a stable code; thrown inside the markup module, caught by `parseVoiceMl`. */
export class MarkupError extends Error {
  constructor(
    readonly code: MarkupErrorCode,
    message: string,
    readonly element?: string,
    readonly attribute?: string,
  ) {
    super(message);
    this.name = "MarkupError";
  }
}

function dtdForbidden(): MarkupError {
  return new MarkupError(
    "MARKUP_DTD_FORBIDDEN",
    "Markup must not contain a DOCTYPE (DTDs and custom entities are not allowed)",
  );
}

/** An element name as shown in messages: truncated, since names are not bounded by XML. */
export function shortName(name: string): string {
  return name.length > 64 ? `${name.slice(0, 64)}…` : name;
}

/** Quote a value for an error message: JSON-escaped (no control characters) and truncated. */
export function quote(value: string, max = 64): string {
  const cut = value.length > max ? `${value.slice(0, max)}…` : value;
  return JSON.stringify(cut);
}

const BUILTIN_ENTITIES: Readonly<Record<string, string>> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
};

function isXmlChar(cp: number): boolean {
  return (
    cp === 0x9 ||
    cp === 0xa ||
    cp === 0xd ||
    (cp >= 0x20 && cp <= 0xd7ff) ||
    (cp >= 0xe000 && cp <= 0xfffd) ||
    (cp >= 0x10000 && cp <= 0x10ffff)
  );
}

const REFERENCE = /^&(?:#([0-9]{1,7})|#x([0-9a-fA-F]{1,6})|([A-Za-z_][A-Za-z0-9._-]{0,63}));/;

/**
 * The entity decoder handed to fast-xml-parser (replaces its own): decodes the XML builtins and
 * character references, refuses every other reference, and records that a DOCTYPE was met
 * (the parser reports one through `addInputEntities`), whose entities are never used.
 */
class SafeEntityDecoder {
  doctypeSeen = false;

  setExternalEntities(): void {}

  addInputEntities(): void {
    this.doctypeSeen = true;
    throw dtdForbidden();
  }

  reset(): void {
    this.doctypeSeen = false;
  }

  setXmlVersion(): void {}

  decode(text: string): string {
    let at = text.indexOf("&");
    if (at < 0) return text;
    let out = "";
    let from = 0;
    while (at >= 0) {
      out += text.slice(from, at);
      const match = REFERENCE.exec(text.slice(at, at + 72));
      if (!match) {
        throw new MarkupError("MARKUP_NOT_XML", `Markup is not well-formed XML: unescaped '&' (write &amp;)`);
      }
      const [ref, dec, hex, name] = match;
      if (name !== undefined) {
        const value = BUILTIN_ENTITIES[name];
        if (value === undefined || !Object.hasOwn(BUILTIN_ENTITIES, name)) {
          throw new MarkupError(
            "MARKUP_NOT_XML",
            `Markup uses the undefined entity &${name}; (only &amp; &lt; &gt; &quot; &apos; and numeric character references are allowed)`,
          );
        }
        out += value;
      } else {
        const cp = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex ?? "", 16);
        if (!isXmlChar(cp)) {
          throw new MarkupError("MARKUP_NOT_XML", `Markup has an invalid character reference ${quote(ref)}`);
        }
        out += String.fromCodePoint(cp);
      }
      from = at + ref.length;
      at = text.indexOf("&", from);
    }
    return out + text.slice(from);
  }
}

/** Hard depth limit given to the parser itself; the tighter MARKUP_LIMITS.maxDepth is checked on the tree. */
const PARSER_MAX_NESTED_TAGS = 256;

function newParser(decoder: SafeEntityDecoder): XMLParser {
  return new XMLParser({
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: "",
    allowBooleanAttributes: false,
    parseTagValue: false,
    parseAttributeValue: false,
    trimValues: false,
    cdataPropName: "#cdata",
    commentPropName: false,
    ignoreDeclaration: true,
    ignorePiTags: true,
    removeNSPrefix: false,
    htmlEntities: false,
    processEntities: { enabled: true, maxEntityCount: 1, maxEntitySize: 1, maxTotalExpansions: 1 },
    entityDecoder: decoder,
    maxNestedTags: PARSER_MAX_NESTED_TAGS,
    unpairedTags: [],
    stopNodes: [],
  });
}

/** Media types a handler may label VoiceML with; the body decides. Anything else is refused. */
function acceptableContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return true;
  const type = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  return (
    type === "" ||
    type.startsWith("text/") ||
    type === "application/xml" ||
    (type.startsWith("application/") && type.endsWith("+xml")) ||
    type === "application/octet-stream"
  );
}

/** An HTML page (`<!DOCTYPE html>` after an optional prolog) gets its own message. */
function checkHtmlPage(body: string): void {
  let i = 0;
  for (;;) {
    while (i < body.length && /\s/.test(body[i] ?? "")) i++;
    if (body.startsWith("<?", i)) {
      const end = body.indexOf("?>", i + 2);
      if (end < 0) return;
      i = end + 2;
    } else if (body.startsWith("<!--", i)) {
      const end = body.indexOf("-->", i + 4);
      if (end < 0) return;
      i = end + 3;
    } else {
      if (/^<!DOCTYPE\s+html[\s>]/i.test(body.slice(i, i + 20))) {
        throw new MarkupError("MARKUP_NOT_XML", "Markup is an HTML page, not VoiceML");
      }
      return;
    }
  }
}

/**
 * True when a DOCTYPE declaration appears anywhere outside comments and CDATA sections (the
 * only places where "<!DOCTYPE" can be content), so DTDs are refused before the parser reads them.
 */
function containsDoctype(body: string): boolean {
  let i = body.indexOf("<!");
  while (i >= 0) {
    if (body.startsWith("<!--", i)) {
      const end = body.indexOf("-->", i + 4);
      if (end < 0) return false;
      i = end + 3;
    } else if (body.startsWith("<![CDATA[", i)) {
      const end = body.indexOf("]]>", i + 9);
      if (end < 0) return false;
      i = end + 3;
    } else if (body.slice(i + 2, i + 9).toUpperCase() === "DOCTYPE") {
      return true;
    } else {
      i += 2;
    }
    i = body.indexOf("<!", i);
  }
  return false;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Turns fast-xml-parser's preserveOrder output into XmlNode[], checking depth on the way. */
function convert(nodes: unknown, depth: number): XmlNode[] {
  if (!Array.isArray(nodes)) return [];
  const out: XmlNode[] = [];
  for (const node of nodes) {
    if (!isRecord(node)) continue;
    for (const [key, value] of Object.entries(node)) {
      if (key === ":@") continue;
      if (key === "#text") {
        out.push({ type: "text", text: String(value) });
      } else if (key === "#cdata") {
        // CDATA comes as [{ "#text": "..." }]; its content is literal text.
        for (const part of convert(value, depth)) if (part.type === "text") out.push(part);
      } else {
        if (depth + 1 > MARKUP_LIMITS.maxDepth) {
          throw new MarkupError(
            "MARKUP_TOO_DEEP",
            `Markup nests elements deeper than ${MARKUP_LIMITS.maxDepth} levels`,
          );
        }
        const attrs = node[":@"];
        const attributes: (readonly [string, string])[] = [];
        if (isRecord(attrs)) {
          for (const [name, v] of Object.entries(attrs)) attributes.push([name, String(v)]);
        }
        out.push({ type: "element", name: key, attributes, children: convert(value, depth + 1) });
      }
    }
  }
  return out;
}

function utf8Length(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/**
 * Reads `body` into its single root element. Throws MarkupError (never anything else) on
 * oversize, non-XML, DTD, entity, depth and multiple-root problems.
 */
export function readXml(body: unknown, contentType?: string): XmlElement {
  if (typeof body !== "string") {
    throw new MarkupError("MARKUP_NOT_XML", "Markup body is not text");
  }
  // UTF-8 needs at least one byte per UTF-16 code unit: the cheap test first.
  if (body.length > MARKUP_LIMITS.maxBytes || utf8Length(body) > MARKUP_LIMITS.maxBytes) {
    throw new MarkupError(
      "MARKUP_TOO_LARGE",
      `Markup is larger than ${MARKUP_LIMITS.maxBytes} bytes (${utf8Length(body)} bytes)`,
    );
  }
  if (!acceptableContentType(contentType)) {
    throw new MarkupError("MARKUP_NOT_XML", `Markup content type ${quote(contentType ?? "")} is not XML`);
  }
  const text = body.startsWith("\uFEFF") ? body.slice(1) : body;
  if (text.trim() === "") throw new MarkupError("MARKUP_NOT_XML", "Markup body is empty");
  checkHtmlPage(text);
  if (containsDoctype(text)) throw dtdForbidden();

  const valid = XMLValidator.validate(text, { allowBooleanAttributes: false, unpairedTags: [] });
  if (valid !== true) {
    const { msg, line, col } = valid.err;
    throw new MarkupError(
      "MARKUP_NOT_XML",
      `Markup is not well-formed XML: ${quote(msg, 160)}${typeof line === "number" ? ` at line ${line}` : ""}${typeof col === "number" ? `, column ${col}` : ""}`,
    );
  }

  const decoder = new SafeEntityDecoder();
  let parsed: unknown;
  try {
    parsed = newParser(decoder).parse(text);
  } catch (err) {
    if (err instanceof MarkupError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    if (/nested/i.test(message)) {
      throw new MarkupError(
        "MARKUP_TOO_DEEP",
        `Markup nests elements deeper than ${MARKUP_LIMITS.maxDepth} levels`,
      );
    }
    throw new MarkupError("MARKUP_NOT_XML", `Markup could not be parsed: ${quote(message, 160)}`);
  }
  if (decoder.doctypeSeen) throw dtdForbidden();

  // The parser drops trailing text after a self-closed root: a document ends with '>' (the
  // root's end, a comment or a processing instruction) or it has text outside the root.
  const top = convert(parsed, 0);
  if (!text.trimEnd().endsWith(">")) {
    throw new MarkupError("MARKUP_NOT_XML", "Markup has text outside the root element");
  }
  if (top.some((n) => n.type === "text" && n.text.trim() !== "")) {
    throw new MarkupError("MARKUP_NOT_XML", "Markup has text outside the root element");
  }
  const roots = top.filter((n): n is XmlElement => n.type === "element");
  const [root, second] = roots;
  if (root === undefined) throw new MarkupError("MARKUP_NOT_XML", "Markup has no root element");
  if (second !== undefined) {
    throw new MarkupError(
      "MARKUP_NOT_XML",
      `Markup has more than one root element (<${shortName(root.name)}>, <${shortName(second.name)}>)`,
    );
  }
  return root;
}
