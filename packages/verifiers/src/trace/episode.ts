import { z } from 'zod';
import { errorRecord } from '../errors/troupe-error.ts';
import { addUsage, emptyUsage, type Usage } from '../model/model-client.ts';
import { randomUuid } from '../util/uuid.ts';
import { Trace } from './trace.ts';
import { type TraceError, TraceErrorSchema, TraceRecordSchema, TraceTaskSchema } from './trace-schema.ts';

/** Version of the serialized episode form (one line of `traces.jsonl`). Bumped on any breaking change. */
export const EPISODE_VERSION = 1;

/** The serialized (JSON) form of an Episode: one line of a run's `traces.jsonl`, with every trace of the episode. */
export const EpisodeRecordSchema = z.object({
  /** The episode format version ({@link EPISODE_VERSION}). */
  version: z.literal(EPISODE_VERSION),
  /** The episode id (a UUID). */
  id: z.string(),
  /** The env that ran it. */
  env: z.object({ id: z.string() }),
  /** The task it ran. */
  task: TraceTaskSchema,
  /** Which rollout of the task this episode is (0-based) and the group it belongs to. */
  group: z.object({ id: z.string(), index: z.number().int().nonnegative() }),
  /** False when the episode or any of its traces recorded an error. */
  ok: z.boolean(),
  /** Errors of the episode itself (the env's own code), apart from its traces' errors. */
  errors: z.array(TraceErrorSchema),
  /** Every agent run of the episode, in completion order. */
  traces: z.array(TraceRecordSchema),
  /** When the episode started (Unix epoch, milliseconds). */
  startedAt: z.number(),
  /** When it ended (Unix epoch, milliseconds); null while it runs. */
  endedAt: z.number().nullable(),
  /** Attempt number when episode retries are configured (0 = first). */
  attempt: z.number().int().nonnegative().default(0),
});
/** The serialized form of an Episode; see {@link EpisodeRecordSchema}. */
export type EpisodeRecord = z.infer<typeof EpisodeRecordSchema>;

/** What `new Episode(init)` takes: an id (default: a fresh UUID), the env, the task stamp and the group. */
export interface EpisodeInit {
  id?: string;
  env: { id: string };
  task: EpisodeRecord['task'];
  group: EpisodeRecord['group'];
}

/** One Env run on one task: every agent run made inside it, in completion order. */
export class Episode {
  readonly id: string;
  readonly env: { id: string };
  readonly task: EpisodeRecord['task'];
  readonly group: EpisodeRecord['group'];
  readonly traces: Trace[] = [];
  errors: TraceError[] = [];
  startedAt = Date.now();
  endedAt: number | null = null;
  attempt = 0;

  constructor(init: EpisodeInit) {
    this.id = init.id ?? randomUuid();
    this.env = init.env;
    this.task = init.task;
    this.group = init.group;
  }

  /** True when the episode has no error of its own and every trace is ok. */
  get ok(): boolean {
    return this.errors.length === 0 && this.traces.every((t) => t.ok);
  }

  /** Traces grouped by agent (role) name. */
  get byAgent(): Record<string, Trace[]> {
    const out: Record<string, Trace[]> = {};
    for (const trace of this.traces) (out[trace.agent.name] ??= []).push(trace);
    return out;
  }

  get usage(): Usage {
    return this.traces.reduce((sum, t) => addUsage(sum, t.usage), emptyUsage());
  }

  recordError(error: unknown, stage?: string): void {
    const record: TraceError = errorRecord(error);
    if (stage) record.stage = stage;
    this.errors.push(record);
  }

  toJSON(): EpisodeRecord {
    return {
      version: EPISODE_VERSION,
      id: this.id,
      env: this.env,
      task: this.task,
      group: this.group,
      ok: this.ok,
      errors: this.errors,
      traces: this.traces.map((t) => t.toJSON()),
      startedAt: this.startedAt,
      endedAt: this.endedAt,
      attempt: this.attempt,
    };
  }

  static fromJSON(value: unknown): Episode {
    const record = EpisodeRecordSchema.parse(value);
    const episode = new Episode({ id: record.id, env: record.env, task: record.task, group: record.group });
    episode.errors = record.errors;
    episode.startedAt = record.startedAt;
    episode.endedAt = record.endedAt;
    episode.attempt = record.attempt;
    for (const trace of record.traces) episode.traces.push(Trace.fromJSON(trace));
    return episode;
  }
}
