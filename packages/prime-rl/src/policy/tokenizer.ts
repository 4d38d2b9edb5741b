import { ConfigError, contentText, type Message } from '@troupe/verifiers';
import { z } from 'zod';

/** Special tokens, always ids 0..5 in this order. */
export const SPECIAL_TOKENS = ['<pad>', '<unk>', '<sys>', '<user>', '<asst>', '<eos>'] as const;
/** One of {@link SPECIAL_TOKENS}: padding, unknown word, the three role markers and end of sequence. */
export type SpecialToken = (typeof SPECIAL_TOKENS)[number];

/**
 * The saved form of a `WordTokenizer` (`tokenizer.toJSON()`, read back by `WordTokenizer.fromJSON`,
 * which throws on another kind or version): the vocabulary, the index of each word being its token
 * id.
 */
export const TokenizerJsonSchema = z.object({
  /** Always `troupe-word-tokenizer`. */
  kind: z.literal('troupe-word-tokenizer'),
  /** Format version. */
  version: z.literal(1),
  /** The words by token id; the first six are {@link SPECIAL_TOKENS}. */
  vocab: z.array(z.string()).min(SPECIAL_TOKENS.length),
});
/** A saved `WordTokenizer`; see {@link TokenizerJsonSchema}. */
export type TokenizerJson = z.infer<typeof TokenizerJsonSchema>;

/** Words: a bracketed word (`[bet]`) is one token, then runs of word characters, then any other non-space character. */
const WORD = /\[\w+\]|\w+|[^\s\w]/g;

/**
 * A word-level tokenizer over a fixed vocabulary, with a chat template.
 *
 * Splitting: `[word]` is one token, `\w+` runs are tokens, every other non-space character is
 * its own token; unknown words become `<unk>`. Decoding joins words with single spaces and
 * attaches punctuation to the word before it (lossy on spacing, exact on words).
 *
 * Chat template (documented in docs/training.md): each message is `<role> words`, with role
 * tokens `<sys>`, `<user>`, `<asst>`; an assistant message ends with `<eos>`. A generation prompt
 * is the rendered conversation followed by `<asst>`; the model then samples the reply and
 * `<eos>`. So a multi-turn prompt always starts with the previous prompt + completion tokens.
 */
export class WordTokenizer {
  readonly vocab: readonly string[];
  private readonly ids: Map<string, number>;

  constructor(vocab: readonly string[]) {
    SPECIAL_TOKENS.forEach((t, i) => {
      if (vocab[i] !== t) throw new ConfigError(`tokenizer vocab[${i}] must be ${t}, got ${vocab[i]}`, { path: `vocab[${i}]` });
    });
    this.vocab = [...vocab];
    this.ids = new Map(this.vocab.map((w, i) => [w, i]));
    if (this.ids.size !== this.vocab.length) throw new ConfigError('tokenizer vocab has duplicate words', { path: 'vocab' });
  }

  /** A tokenizer whose vocabulary is the specials plus every word of `corpus`, in first-seen order. */
  static fromCorpus(options: { corpus: readonly string[] }): WordTokenizer {
    const vocab: string[] = [...SPECIAL_TOKENS];
    const seen = new Set<string>(vocab);
    for (const text of options.corpus) {
      for (const word of splitWords(text)) {
        if (!seen.has(word)) {
          seen.add(word);
          vocab.push(word);
        }
      }
    }
    return new WordTokenizer(vocab);
  }

  static fromJSON(value: unknown): WordTokenizer {
    return new WordTokenizer(TokenizerJsonSchema.parse(value).vocab);
  }

  toJSON(): TokenizerJson {
    return { kind: 'troupe-word-tokenizer', version: 1, vocab: [...this.vocab] };
  }

  get size(): number {
    return this.vocab.length;
  }

  /** The id of a word or special token (`<unk>` when unknown). */
  id(word: string): number {
    return this.ids.get(word) ?? 1;
  }

  get eosId(): number {
    return 5;
  }

  encode(text: string): number[] {
    return splitWords(text).map((w) => this.id(w));
  }

  /** Text of token ids; special tokens are dropped. */
  decode(ids: readonly number[]): string {
    let out = '';
    for (const id of ids) {
      if (id < SPECIAL_TOKENS.length) continue;
      const word = this.vocab[id] ?? '<unk>';
      if (out && /\w|\[/.test(word[0] ?? '')) out += ' ';
      else if (out && /^[<(]$/.test(word)) out += ' ';
      out += word;
    }
    return out;
  }

  /** Tokens of a conversation (see the class doc); `generation` appends `<asst>` for the reply. */
  renderChat(options: { messages: readonly Message[]; generation?: boolean }): number[] {
    const out: number[] = [];
    for (const message of options.messages) {
      switch (message.role) {
        case 'system':
          out.push(2, ...this.encode(message.content));
          break;
        case 'user':
          out.push(3, ...this.encode(contentText(message.content)));
          break;
        case 'assistant':
          out.push(4, ...this.encode(message.content ?? ''), this.eosId);
          break;
        case 'tool':
          out.push(3, ...this.encode(message.content));
          break;
      }
    }
    if (options.generation ?? true) out.push(4);
    return out;
  }
}

function splitWords(text: string): string[] {
  return text.match(WORD) ?? [];
}
