import { createReadStream } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { ParseError } from '@troupe/verifiers';
import { z } from 'zod';
import { formatIssues } from '../algorithms/format-issues.ts';
import { type TrainingSample, TrainingSampleSchema } from './training-sample.ts';

/** Name in the header line of a batch file. */
export const BATCH_FORMAT = 'troupe.batch';
/** Version of the batch file format; bumped on any breaking change. */
export const BATCH_FORMAT_VERSION = 1;

/** First line of a batch file. */
export const BatchHeaderSchema = z.strictObject({
  format: z.literal(BATCH_FORMAT),
  version: z.literal(BATCH_FORMAT_VERSION),
  /** Number of sample lines that follow. */
  numSamples: z.number().int().nonnegative(),
  /** Trainer step the batch is for, when known. */
  step: z.number().int().nonnegative().optional(),
  /** ISO-8601 time the file was written. */
  createdAt: z.string(),
  /** Free metadata (policy version, algorithm, env mix …). */
  meta: z.record(z.string(), z.unknown()).optional(),
});
export type BatchHeader = z.infer<typeof BatchHeaderSchema>;

/** A batch read from or written to disk. */
export interface BatchFile {
  header: BatchHeader;
  samples: TrainingSample[];
}

/** Options of {@link serializeBatch} and {@link writeBatch}. */
export interface SerializeBatchOptions {
  samples: readonly TrainingSample[];
  step?: number;
  meta?: Record<string, unknown>;
  /** Defaults to now. */
  createdAt?: Date;
}

/** The JSONL text of a batch: the header line, then one sample per line, each line ending in `\n`. */
export function serializeBatch(options: SerializeBatchOptions): string {
  const header: BatchHeader = {
    format: BATCH_FORMAT,
    version: BATCH_FORMAT_VERSION,
    numSamples: options.samples.length,
    ...(options.step !== undefined ? { step: options.step } : {}),
    createdAt: (options.createdAt ?? new Date()).toISOString(),
    ...(options.meta !== undefined ? { meta: options.meta } : {}),
  };
  const lines = [JSON.stringify(header)];
  for (const sample of options.samples) {
    lines.push(
      JSON.stringify({
        tokenIds: sample.tokenIds,
        mask: sample.mask,
        logprobs: sample.logprobs,
        advantages: sample.advantages,
        env: sample.env,
        role: sample.role,
        traceId: sample.traceId,
        episodeId: sample.episodeId,
        branch: sample.branch,
      }),
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Writes a batch file atomically (a temporary file renamed into place), creating the directory. */
export async function writeBatch(options: SerializeBatchOptions & { path: string }): Promise<void> {
  await mkdir(dirname(options.path), { recursive: true });
  const temporary = `${options.path}.${process.pid}.tmp`;
  await writeFile(temporary, serializeBatch(options));
  await rename(temporary, options.path);
}

/**
 * Parses and validates batch text. Throws a `ParseError` naming the source, the line and the
 * field, e.g. `batch.jsonl line 3: sample.advantages[2]: Invalid input: expected number`.
 */
export function parseBatch(options: { text: string; source?: string }): BatchFile {
  const parser = new BatchParser(options.source ?? 'batch');
  const lines = options.text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  lines.forEach((line, index) => {
    parser.line(line, index + 1);
  });
  return parser.finish();
}

/** Reads and validates a batch file line by line (see {@link parseBatch} for the errors). */
export async function readBatch(options: { path: string }): Promise<BatchFile> {
  const parser = new BatchParser(options.path);
  const lines = createInterface({ input: createReadStream(options.path, 'utf8'), crlfDelay: Number.POSITIVE_INFINITY });
  let number = 0;
  for await (const line of lines) parser.line(line, ++number);
  return parser.finish();
}

class BatchParser {
  private header: BatchHeader | null = null;
  private readonly samples: TrainingSample[] = [];

  constructor(private readonly source: string) {}

  line(text: string, number: number): void {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new ParseError(`${this.source} line ${number}: not JSON (${(error as Error).message})`);
    }
    if (this.header === null) {
      const parsed = BatchHeaderSchema.safeParse(value);
      if (!parsed.success) {
        throw new ParseError(
          `${this.source} line ${number}: not a ${BATCH_FORMAT} v${BATCH_FORMAT_VERSION} header: ${formatIssues(parsed.error, 'header')}`,
        );
      }
      this.header = parsed.data;
      return;
    }
    const parsed = TrainingSampleSchema.safeParse(value);
    if (!parsed.success) throw new ParseError(`${this.source} line ${number}: ${formatIssues(parsed.error, 'sample')}`);
    this.samples.push(parsed.data);
  }

  finish(): BatchFile {
    if (this.header === null) throw new ParseError(`${this.source}: empty, expected a ${BATCH_FORMAT} header line`);
    if (this.samples.length !== this.header.numSamples) {
      throw new ParseError(
        `${this.source}: header.numSamples is ${this.header.numSamples} but ${this.samples.length} sample lines follow`,
      );
    }
    return { header: this.header, samples: this.samples };
  }
}
