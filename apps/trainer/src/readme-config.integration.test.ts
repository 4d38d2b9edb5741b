import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type NodeProcessResult, runNode } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';

const app = resolve(import.meta.dirname, '..');
const cli = resolve(import.meta.dirname, 'cli.ts');
const readme = readFileSync(resolve(app, '../../README.md'), 'utf8');

/** The ```toml block after the README's `readme-train-config` marker, verbatim. */
function readmeConfig(): string {
  const marker = readme.indexOf('<!-- readme-train-config');
  expect(marker, 'README has no <!-- readme-train-config --> marker').toBeGreaterThan(0);
  const block = readme.slice(marker).match(/```toml\n([\s\S]*?)```/);
  if (!block?.[1]) throw new Error('README: no toml block after the readme-train-config marker');
  return block[1];
}

function trainer(args: string[]): Promise<NodeProcessResult> {
  return runNode(['--conditions=@troupe/source', '--import', 'tsx', cli, ...args], { cwd: app });
}

describe("the README's training config", () => {
  it('resolves with --dry-run and trains for real: two steps of self-play on one policy', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-readme-config-'));
    const config = join(dir, 'run.toml');
    writeFileSync(config, readmeConfig());

    const dry = await trainer(['train', '--config', config, '--dry-run']);
    expect(dry.stderr).toBe('');
    expect(dry.code).toBe(0);
    const resolved = JSON.parse(dry.stdout);
    expect(resolved.maxSteps).toBe(100);
    expect(resolved.train.source).toHaveLength(1);
    expect(resolved.train.source[0]).toMatchObject({ env: 'kuhn-poker', groupSize: 8, algorithm: { type: 'rae' } });
    expect(resolved.train.source[0].roles).toEqual({ player0: { policy: 'main' }, player1: { policy: 'main' } });

    // The same file, cut to two steps: it plays, scores and trains.
    const out = join(dir, 'out');
    const run = await trainer(['train', '--config', config, '--max-steps', '2', '--out', out]);
    expect(run.code).toBe(0);
    const steps = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, number>);
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      expect(step.episodes).toBe(576 * (step.step ?? 0)); // cumulative: 576 hands a step
      expect(step['batch/traces']).toBe(1152); // both seats reach the trainer: one policy, self-play
      expect(Number.isFinite(step['trainer/loss'])).toBe(true);
    }
  });
});
