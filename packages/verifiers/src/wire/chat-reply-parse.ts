/**
 * The fast parse of a chat completion reply: `JSON.parse` with the per-token logprob entries
 * lifted out of the text first.
 *
 * A vLLM reply with `logprobs: true` holds one object per generated token
 * (`{"token":" the","logprob":-0.01,"bytes":[32,116,104,101],"top_logprobs":[]}`), and parsing
 * them — an object, two arrays and their numbers per token — was the largest single cost of an
 * orchestrator receiving a fleet's replies (`pnpm bench:fleet`, docs/benchmarks.md). Of them the
 * client keeps only the logprob (and the token text when the reply has no `token_ids`).
 *
 * {@link parseChatReply} matches each entry of every `"logprobs":{"content":[…]` array of the
 * text with one sticky regular expression — the compact shape OpenAI-compatible servers write:
 * keys `token`, `logprob`, then optionally `bytes` (null or integers) and `top_logprobs` (`[]`), no
 * whitespace — keeping only the logprob's text, and parses the rest with `JSON.parse`. Measured
 * on the fleet's replies (≈110 bytes a token): 0.37 ms of CPU per 1,000 tokens against 0.92 for
 * `JSON.parse`, both with the reply's translation to a `ModelResponse`. A lifted array stands in the parsed value as an empty `content`
 * whose entries {@link liftedLogprobs} gives. Anything else — another shape, whitespace, an escape
 * it does not know, a number JSON would refuse, a lifted array outside `choices[i].logprobs` —
 * and it falls back to `JSON.parse` of the whole text, so what it accepts, refuses and returns is
 * what `JSON.parse` does (`parseChatReplyPlain` is that reference; `chat-reply-parse.test.ts` holds
 * the two equal). The numbers go through `Number()` of their exact text: the same doubles as
 * `JSON.parse` gives.
 */
import { randomBytes } from 'node:crypto';

/** What was lifted from one `logprobs.content` array. */
export interface LiftedLogprobs {
  /** Each entry's `logprob`, in order. */
  readonly logprobs: number[];
  /** Each entry's `token` (decoded on demand). */
  tokens(): string[];
  /** The entries as `JSON.parse` gives them (parsed on demand from the reply's text). */
  entries(): unknown[];
}

const lifted = new WeakMap<object, LiftedLogprobs>();

/** The entries lifted from a parsed `logprobs` object by {@link parseChatReply}, if any. */
export function liftedLogprobs(logprobs: unknown): LiftedLogprobs | undefined {
  return typeof logprobs === 'object' && logprobs !== null ? lifted.get(logprobs) : undefined;
}

/**
 * Puts lifted entries back as `JSON.parse` gives them, so the value equals `JSON.parse` of the
 * reply (for a caller that walks it generically, such as a schema's error path). Idempotent.
 */
export function restoreLiftedLogprobs(reply: unknown): void {
  const choices = (reply as { choices?: unknown } | null)?.choices;
  if (!Array.isArray(choices)) return;
  for (const choice of choices) {
    const logprobs = (choice as { logprobs?: unknown } | null)?.logprobs;
    const entries = liftedLogprobs(logprobs);
    if (!entries) continue;
    (logprobs as { content: unknown }).content = entries.entries();
    lifted.delete(logprobs as object);
  }
}

/** The reference: a plain `JSON.parse`. */
export function parseChatReplyPlain(text: string): unknown {
  return JSON.parse(text);
}

const OPEN = '"logprobs":{"content":[';
/** What stands for a lifted array in the text handed to `JSON.parse`, before its index. */
const MARKER = `lift-${randomBytes(12).toString('hex')}-`;
const PARSED_MARKER = `\u0000${MARKER}`;

/** One lifted array: where it sits in the text and what it held. */
interface Span {
  /** Index of the array's first entry (just past `[`) and of its closing `]`. */
  from: number;
  to: number;
  logprobs: number[];
}

/**
 * `JSON.parse(text)`, with the logprob entries of a chat completion lifted out first (see the
 * module header). Throws exactly when `JSON.parse` throws.
 */
export function parseChatReply(text: string): unknown {
  const spans: Span[] = [];
  for (let at = text.indexOf(OPEN); at >= 0; ) {
    const span = scanEntries(text, at + OPEN.length);
    if (!span) return JSON.parse(text);
    spans.push(span);
    at = text.indexOf(OPEN, span.to);
  }
  if (spans.length === 0) return JSON.parse(text);
  let rest = '';
  let last = 0;
  spans.forEach((span, index) => {
    // The array becomes a string no reply holds (a process-wide random nonce): `"content":"\u0000…"`.
    rest += `${text.slice(last, span.from - 1)}"\\u0000${MARKER}${index}"`;
    last = span.to + 1;
  });
  rest += text.slice(last);
  let parsed: unknown;
  try {
    parsed = JSON.parse(rest);
  } catch {
    return JSON.parse(text);
  }
  return attach(parsed, spans, text) ? parsed : JSON.parse(text);
}

/** Puts each span on the choice whose `logprobs.content` holds its index; false when they do not all match. */
function attach(parsed: unknown, spans: Span[], text: string): boolean {
  const choices = (parsed as { choices?: unknown } | null)?.choices;
  if (!Array.isArray(choices)) return false;
  const seen = new Set<number>();
  const found: { logprobs: { content: unknown }; span: Span }[] = [];
  for (const choice of choices) {
    const logprobs = (choice as { logprobs?: unknown } | null)?.logprobs as { content?: unknown } | null | undefined;
    if (typeof logprobs !== 'object' || logprobs === null) continue;
    const content = logprobs.content;
    if (typeof content !== 'string' || !content.startsWith(PARSED_MARKER)) continue;
    const index = Number(content.slice(PARSED_MARKER.length));
    const span = spans[index];
    if (!span || seen.has(index)) return false;
    seen.add(index);
    found.push({ logprobs: logprobs as { content: unknown }, span });
  }
  if (seen.size !== spans.length) return false;
  for (const { logprobs, span } of found) {
    logprobs.content = [];
    const entries = () => JSON.parse(text.slice(span.from - 1, span.to + 1)) as { token: string }[];
    lifted.set(logprobs, { logprobs: span.logprobs, tokens: () => entries().map((entry) => entry.token), entries });
  }
  return true;
}

/**
 * One entry in the compact shape, sticky at `lastIndex`: the logprob's text is group 1. The token
 * is a JSON string (code units from space on but `"` and `\`, or a known escape), the number JSON's grammar,
 * `bytes` null or JSON integers, `top_logprobs` empty.
 */
const ENTRY =
  /\{"token":"(?:[ !#-[\]-\uffff]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*","logprob":(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)(?:,"bytes":(?:null|\[(?:-?(?:0|[1-9]\d*)(?:,-?(?:0|[1-9]\d*))*)?\]))?(?:,"top_logprobs":\[\])?\}/y;

/** The entries of one array from `from` (just past `[`), or null when one is not in the compact shape. */
function scanEntries(text: string, from: number): Span | null {
  const span: Span = { from, to: from, logprobs: [] };
  let i = from;
  if (text.charCodeAt(i) === 93 /* ] */) {
    span.to = i;
    return span;
  }
  for (;;) {
    ENTRY.lastIndex = i;
    const match = ENTRY.exec(text);
    if (!match) return null;
    span.logprobs.push(Number(match[1]));
    i = ENTRY.lastIndex;
    const next = text.charCodeAt(i);
    if (next === 93 /* ] */) {
      span.to = i;
      return span;
    }
    if (next !== 44 /* , */) return null;
    i++;
  }
}
