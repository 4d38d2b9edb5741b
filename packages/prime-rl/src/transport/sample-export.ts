import { createReadStream } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { ParseError } from '@troupe/verifiers';
import { z } from 'zod';
import { formatIssues } from '../algorithms/format-issues.ts';
import type { WireSample } from './micro-batch.ts';

/** Name in the header line of a sample export. */
export const SAMPLE_EXPORT_FORMAT = 'troupe.batch';
/**
 * Version of the export. 2: prime-rl's `TrainingSample` per line (the samples the wire packs).
 * Version 1 (troupe's own fields, no temperatures, no trainer read it) is refused with a message.
 */
export const SAMPLE_EXPORT_VERSION = 2;

/** First line of a sample export. */
export const SampleExportHeaderSchema = z.strictObject({
  format: z.literal(SAMPLE_EXPORT_FORMAT),
  version: z.literal(SAMPLE_EXPORT_VERSION),
  /** Number of sample lines that follow. */
  numSamples: z.number().int().nonnegative(),
  /** Trainer step (1-indexed, as the rank files) the samples were sent for, when known. */
  step: z.number().int().nonnegative().optional(),
  /** ISO-8601 time the file was written. */
  createdAt: z.string(),
  /** Free metadata (policy version, algorithm …). */
  meta: z.record(z.string(), z.unknown()).optional(),
});
/** The first line of a sample export file; see {@link SampleExportHeaderSchema}. */
export type SampleExportHeader = z.infer<typeof SampleExportHeaderSchema>;

const floats = z.array(z.number());

/**
 * One sample line: prime-rl's `TrainingSample` with its own (snake_case) field names, per token,
 * plus troupe's provenance under `troupe` (what the wire drops).
 */
export const ExportedSampleSchema = z
  .strictObject({
    token_ids: z.array(z.number().int().nonnegative()),
    mask: z.array(z.boolean()),
    logprobs: floats,
    temperatures: z.array(z.number().positive()),
    env_name: z.string().refine((name) => name !== 'all', { message: '"all" is reserved' }),
    advantages: floats.nullable().optional(),
    ref_logprobs: floats.optional(),
    rl_weights: floats.optional(),
    ce_weights: floats.optional(),
    ref_kl_weights: floats.optional(),
    troupe: z
      .strictObject({
        role: z.string(),
        trace_id: z.string(),
        episode_id: z.string(),
        branch: z.number().int().nonnegative(),
      })
      .optional(),
  })
  .superRefine((sample, context) => {
    const length = sample.token_ids.length;
    for (const field of [
      'mask',
      'logprobs',
      'temperatures',
      'advantages',
      'ref_logprobs',
      'rl_weights',
      'ce_weights',
      'ref_kl_weights',
    ] as const) {
      const values = sample[field];
      if (values && values.length !== length) {
        context.addIssue({ code: 'custom', path: [field], message: `has ${values.length} entries but token_ids has ${length}` });
      }
    }
  });
/**
 * One sample line of a sample export (prime-rl's `TrainingSample` fields, snake_case, per token, plus
 * troupe's provenance); see {@link ExportedSampleSchema}.
 */
export type ExportedSample = z.infer<typeof ExportedSampleSchema>;

/** A sample export read back: its header and the samples as the packer takes them. */
export interface SampleExport {
  header: SampleExportHeader;
  samples: WireSample[];
}

/** Options of {@link serializeSampleExport} and {@link writeSampleExport}. */
export interface SerializeSampleExportOptions {
  /** The samples exactly as handed to `prepareBatch` / `RolloutLink.send`. */
  samples: readonly WireSample[];
  step?: number;
  meta?: Record<string, unknown>;
  /** Defaults to now. */
  createdAt?: Date;
}

/** `<outputDir>/samples/step_<step>.jsonl`: where `RolloutLink` exports a step's samples (`exportSamples`). */
export function sampleExportPath(options: { outputDir: string; step: number }): string {
  return join(options.outputDir, 'samples', `step_${options.step}.jsonl`);
}

function toLine(sample: WireSample): ExportedSample {
  const n = sample.tokenIds.length;
  const temperatures =
    typeof sample.temperatures === 'number' ? new Array<number>(n).fill(sample.temperatures) : [...sample.temperatures];
  const line: ExportedSample = {
    token_ids: [...sample.tokenIds],
    mask: [...sample.mask],
    logprobs: [...sample.logprobs],
    temperatures,
    env_name: sample.envName,
  };
  if (sample.advantages !== undefined) line.advantages = sample.advantages === null ? null : [...sample.advantages];
  if (sample.refLogprobs) line.ref_logprobs = [...sample.refLogprobs];
  if (sample.rlWeights) line.rl_weights = [...sample.rlWeights];
  if (sample.ceWeights) line.ce_weights = [...sample.ceWeights];
  if (sample.refKlWeights) line.ref_kl_weights = [...sample.refKlWeights];
  if (sample.provenance) {
    const { role, traceId, episodeId, branch } = sample.provenance;
    line.troupe = { role, trace_id: traceId, episode_id: episodeId, branch };
  }
  return line;
}

function fromLine(line: ExportedSample): WireSample {
  const sample: WireSample = {
    tokenIds: line.token_ids,
    mask: line.mask,
    logprobs: line.logprobs,
    temperatures: line.temperatures,
    envName: line.env_name,
  };
  if (line.advantages !== undefined) sample.advantages = line.advantages;
  if (line.ref_logprobs) sample.refLogprobs = line.ref_logprobs;
  if (line.rl_weights) sample.rlWeights = line.rl_weights;
  if (line.ce_weights) sample.ceWeights = line.ce_weights;
  if (line.ref_kl_weights) sample.refKlWeights = line.ref_kl_weights;
  if (line.troupe) {
    const { role, trace_id, episode_id, branch } = line.troupe;
    sample.provenance = { role, traceId: trace_id, episodeId: episode_id, branch };
  }
  return sample;
}

/**
 * The JSONL text of a sample export (`troupe.batch` v2): a header line, then one prime-rl
 * `TrainingSample` per line (per-token temperatures written out), each line ending in `\n`.
 * Not a training format: prime-rl's trainer reads the packed `MicroBatch` rank files; this is
 * the same samples before packing, for inspection and for the wire check's `--samples`.
 */
export function serializeSampleExport(options: SerializeSampleExportOptions): string {
  const header: SampleExportHeader = {
    format: SAMPLE_EXPORT_FORMAT,
    version: SAMPLE_EXPORT_VERSION,
    numSamples: options.samples.length,
    ...(options.step !== undefined ? { step: options.step } : {}),
    createdAt: (options.createdAt ?? new Date()).toISOString(),
    ...(options.meta !== undefined ? { meta: options.meta } : {}),
  };
  const lines = [JSON.stringify(header)];
  for (const sample of options.samples) lines.push(JSON.stringify(toLine(sample)));
  return `${lines.join('\n')}\n`;
}

/** Writes a sample export atomically (a temporary file renamed into place), creating the directory. */
export async function writeSampleExport(options: SerializeSampleExportOptions & { path: string }): Promise<void> {
  await mkdir(dirname(options.path), { recursive: true });
  const temporary = `${options.path}.${process.pid}.tmp`;
  await writeFile(temporary, serializeSampleExport(options));
  await rename(temporary, options.path);
}

/**
 * Parses and validates a sample export. Throws a `ParseError` naming the source, the line and
 * the field, e.g. `step_3.jsonl line 3: sample.advantages[2]: Invalid input: expected number`.
 */
export function parseSampleExport(options: { text: string; source?: string }): SampleExport {
  const parser = new ExportParser(options.source ?? 'samples');
  const lines = options.text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  lines.forEach((line, index) => {
    parser.line(line, index + 1);
  });
  return parser.finish();
}

/** Reads and validates a sample export line by line (see {@link parseSampleExport} for the errors). */
export async function readSampleExport(options: { path: string }): Promise<SampleExport> {
  const parser = new ExportParser(options.path);
  const lines = createInterface({ input: createReadStream(options.path, 'utf8'), crlfDelay: Number.POSITIVE_INFINITY });
  let number = 0;
  for await (const line of lines) parser.line(line, ++number);
  return parser.finish();
}

class ExportParser {
  private header: SampleExportHeader | null = null;
  private readonly samples: WireSample[] = [];

  constructor(private readonly source: string) {}

  line(text: string, number: number): void {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new ParseError(`${this.source} line ${number}: not JSON (${(error as Error).message})`);
    }
    if (this.header === null) {
      const version = (value as { format?: unknown; version?: unknown } | null)?.version;
      if ((value as { format?: unknown } | null)?.format === SAMPLE_EXPORT_FORMAT && version === 1) {
        throw new ParseError(
          `${this.source} line ${number}: troupe.batch v1 (troupe's own sample fields, no temperatures) is no longer read; export the step again (v2: prime-rl's TrainingSample per line)`,
        );
      }
      const parsed = SampleExportHeaderSchema.safeParse(value);
      if (!parsed.success) {
        throw new ParseError(
          `${this.source} line ${number}: not a ${SAMPLE_EXPORT_FORMAT} v${SAMPLE_EXPORT_VERSION} header: ${formatIssues(parsed.error, 'header')}`,
        );
      }
      this.header = parsed.data;
      return;
    }
    const parsed = ExportedSampleSchema.safeParse(value);
    if (!parsed.success) throw new ParseError(`${this.source} line ${number}: ${formatIssues(parsed.error, 'sample')}`);
    this.samples.push(fromLine(parsed.data));
  }

  finish(): SampleExport {
    if (this.header === null) throw new ParseError(`${this.source}: empty, expected a ${SAMPLE_EXPORT_FORMAT} header line`);
    if (this.samples.length !== this.header.numSamples) {
      throw new ParseError(
        `${this.source}: header.numSamples is ${this.header.numSamples} but ${this.samples.length} sample lines follow`,
      );
    }
    return { header: this.header, samples: this.samples };
  }
}
