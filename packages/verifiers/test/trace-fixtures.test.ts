import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEpisodes } from '../src/eval/traces-file.ts';
import { EPISODE_VERSION, Episode } from '../src/trace/episode.ts';
import { Trace } from '../src/trace/trace.ts';
import { TRACE_VERSION, TraceRecordSchema } from '../src/trace/trace-schema.ts';

// Every released trace version has a run directory under fixtures/traces/v<version>/run, written
// once by a real `troupe eval` (fixtures/traces/write-trace-fixture.ts) and never rewritten. A
// run of an older version must still load: when TRACE_VERSION is bumped, write the new version's
// fixture and add the migration from the old form; this test then loads both.
const fixtures = join(import.meta.dirname, 'fixtures', 'traces');
const versions = readdirSync(fixtures)
  .filter((name) => /^v\d+$/.test(name))
  .map((name) => Number(name.slice(1)))
  .sort((a, b) => a - b);

/** The rewards each fixture run holds: the scripted model answered the first task right, the other two wrong. */
const EXPECTED_REWARDS = [1, 0, 0];

describe('trace format fixtures', () => {
  it('has a committed run directory for the current trace version', () => {
    expect(versions).toContain(TRACE_VERSION);
    expect(EPISODE_VERSION).toBe(TRACE_VERSION);
  });

  for (const version of versions) {
    describe(`v${version}`, () => {
      const runDir = join(fixtures, `v${version}`, 'run');
      const lines = readFileSync(join(runDir, 'traces.jsonl'), 'utf8').trimEnd().split('\n');

      it('is a version this code reads (a migration exists for every older version)', () => {
        for (const line of lines) {
          const record = JSON.parse(line) as { version: number; traces: { version: number }[] };
          expect(record.version).toBe(version);
          for (const trace of record.traces) expect(trace.version).toBe(version);
        }
        // No version before TRACE_VERSION has been released, so no migration is needed yet; a
        // bump must add one here (loading an older record through it) rather than drop a fixture.
        expect(version).toBe(TRACE_VERSION);
      });

      const readJson = (name: string) => JSON.parse(readFileSync(join(runDir, name), 'utf8')) as unknown;

      it('loads as a run directory without bad lines, every line an episode', () => {
        const run = readEpisodes(join(runDir, 'traces.jsonl'));
        expect(run.badLines).toEqual([]);
        expect(run.episodes).toHaveLength(lines.length);
        expect(run.episodes.map((episode) => episode.task.key)).toEqual(['arithmetic-0-0', 'arithmetic-0-1', 'arithmetic-0-2']);
        expect(readJson('config.json')).toMatchObject({ model: 'scripted-model', env: { id: 'single-agent' } });
      });

      it('keeps what was recorded: messages, calls, rewards, stop condition, and the summary agrees', () => {
        const run = readEpisodes(join(runDir, 'traces.jsonl'));
        const traces = run.episodes.map((episode) => Trace.fromJSON(episode.toJSON().traces[0]));
        expect(traces.map((trace) => trace.toJSON().rewards.correct?.score)).toEqual(EXPECTED_REWARDS);
        for (const trace of traces) {
          const record = trace.toJSON();
          expect(record.stopCondition).toBe('agent_completed');
          expect(record.nodes.map((node) => node.message.role)).toEqual(['user', 'assistant']);
          expect(record.calls).toHaveLength(1);
          expect(record.calls[0]).toMatchObject({ node: 1, promptNode: 0, model: 'scripted-model', finishReason: 'stop' });
          expect(record.agent).toMatchObject({ name: 'agent', trainable: true, harness: 'null' });
          expect(String(record.nodes[1]?.message.content)).toMatch(/^The answer is -?\d+$/);
        }
        const summary = readJson('summary.json') as { episodes: number; rewardMean: number };
        expect(summary.episodes).toBe(3);
        expect(summary.rewardMean).toBeCloseTo(EXPECTED_REWARDS.reduce((a, b) => a + b, 0) / 3, 12);
      });

      it('round-trips: Episode.fromJSON(line).toJSON() is the stored record', () => {
        for (const line of lines) {
          const stored = JSON.parse(line) as Record<string, unknown>;
          expect(Episode.fromJSON(stored).toJSON()).toEqual(stored);
          for (const trace of stored.traces as unknown[]) expect(TraceRecordSchema.parse(trace)).toEqual(trace);
        }
      });
    });
  }
});
