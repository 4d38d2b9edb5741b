import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { troupe } from '../../test/support/troupe-process.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';

const taskKeys = (runDir: string) =>
  readFileSync(join(runDir, 'traces.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { task: { key: string } }).task.key)
    .sort();

describe('troupe eval --select', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await ScriptedModelServer.start({ script: () => 'The answer is 0' });
  });
  afterAll(() => server.close());

  const base = () => ['eval', '-m', 'm', '-b', server.baseUrl, '--harness', 'null', '--allow-failures'];

  it('runs only the selected tasks, records the selection in config.json, and resume keeps to it', async () => {
    const runDir = join(mkdtempSync(join(tmpdir(), 'troupe-select-')), 'run');
    const args = [
      ...base(),
      '--select',
      'indices=3-5,40',
      '--select',
      'keys=arithmetic-0-5,arithmetic-0-40',
      '--run-dir',
      runDir,
    ];
    const first = await troupe(args);
    expect(first.stderr).not.toMatch(/Error/);
    expect(first.code).toBe(0);
    expect(taskKeys(runDir)).toEqual(['arithmetic-0-40', 'arithmetic-0-5']);
    const saved = JSON.parse(readFileSync(join(runDir, 'config.json'), 'utf8')) as { select: unknown };
    expect(saved.select).toEqual({ indices: '3-5,40', keys: ['arithmetic-0-5', 'arithmetic-0-40'], seed: 0 });
    // Drop one episode: resume must run that one again and nothing outside the selection.
    const lines = readFileSync(join(runDir, 'traces.jsonl'), 'utf8').trim().split('\n');
    writeFileSync(join(runDir, 'traces.jsonl'), `${lines[0]}\n`);
    const resumed = await troupe(['eval', '--resume', runDir, '--allow-failures']);
    expect(resumed.code).toBe(0);
    expect(taskKeys(runDir)).toEqual(['arithmetic-0-40', 'arithmetic-0-5']);
  });

  it('--dry-run counts a seeded sample; a bad field or an index past the end exits 2 naming it', async () => {
    const dry = await troupe([...base(), '--select', 'sample=7', '--select', 'seed=3', '-r', '2', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/dry run: 7 tasks × 2 rollouts = 14 episodes/);
    const badField = await troupe([...base(), '--select', 'task=1', '--dry-run']);
    expect(badField.code).toBe(2);
    expect(badField.stderr).toMatch(/--select task=1: expected FIELD=VALUE with FIELD one of indices, keys, types, sample, seed/);
    const pastEnd = await troupe([...base(), '--select', 'indices=100', '--dry-run']);
    expect(pastEnd.code).toBe(2);
    expect(pastEnd.stderr).toMatch(/select\.indices: taskset arithmetic has 100 tasks \(0 to 99\); 100 is past its end/);
  });

  it('troupe debug --select boots a task of the selection; --task counts within it', async () => {
    const booted = await troupe(['debug', '--select', 'keys=arithmetic-0-7', '--', 'true']);
    expect(booted.code).toBe(0);
    const past = await troupe(['debug', '--select', 'keys=arithmetic-0-7', '--task', '1', '--', 'true']);
    expect(past.code).toBe(2);
    expect(past.stderr).toMatch(/--task 1: the selection \(--select\) holds 1 task \(indexes 0 to 0\)/);
  });
});
