import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { troupe } from '../../test/support/troupe-process.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';

const root = resolve(import.meta.dirname, '../../../..');
const _cli = join(root, 'packages/verifiers/src/cli/main.ts');

describe('troupe eval --dry-run and --clean', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await ScriptedModelServer.start({ script: () => 'The answer is 0' });
  });
  afterAll(() => server.close());

  it('--dry-run prints the resolved config and the task count, calls nothing and creates nothing', async () => {
    const outputs = join(mkdtempSync(join(tmpdir(), 'troupe-dry-')), 'outputs');
    const result = await troupe([
      'eval',
      '-m',
      'm',
      '-b',
      server.baseUrl,
      '-n',
      '3',
      '-r',
      '2',
      '--harness',
      'null',
      '--top-p',
      '0.5',
      '-o',
      outputs,
      '--dry-run',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/dry run: 3 tasks × 2 rollouts = 6 episodes; nothing was called or created/);
    const json = JSON.parse(result.stdout.slice(0, result.stdout.lastIndexOf('}') + 1));
    expect(json).toMatchObject({
      model: 'm',
      numTasks: 3,
      rollouts: 2,
      sampling: { topP: 0.5 },
      roles: { agent: { harness: 'null' } },
    });
    expect(server.requests).toHaveLength(0); // not even the preflight
    expect(existsSync(outputs)).toBe(false);
  });

  it('--run-dir refuses an existing run; --clean replaces it instead of appending to it', async () => {
    const runDir = join(mkdtempSync(join(tmpdir(), 'troupe-clean-')), 'run');
    const args = [
      'eval',
      '-m',
      'm',
      '-b',
      server.baseUrl,
      '-n',
      '2',
      '--harness',
      'null',
      '--run-dir',
      runDir,
      '--allow-failures',
    ];
    expect((await troupe(args)).code).toBe(0);
    writeFileSync(join(runDir, 'stale.txt'), 'from before');
    const refused = await troupe(args);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--run-dir .* exists and is not empty \(--clean replaces it/);
    const dry = await troupe([...args, '--clean', '--dry-run']);
    expect(dry.stdout).toMatch(/\(would be replaced\); nothing was called or created/);
    expect(existsSync(join(runDir, 'stale.txt'))).toBe(true);
    const cleaned = await troupe([...args, '--clean']);
    expect(cleaned.code).toBe(0);
    expect(existsSync(join(runDir, 'stale.txt'))).toBe(false);
    expect(readFileSync(join(runDir, 'traces.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
    expect((await troupe(['eval', '-m', 'm', '--resume', runDir, '--clean'])).stderr).toMatch(/choose one/);
  });

  it('--run-dir DIR --resume continues DIR, as troupe train spells it', async () => {
    const runDir = join(mkdtempSync(join(tmpdir(), 'troupe-resume-')), 'run');
    const first = ['eval', '-m', 'm', '-b', server.baseUrl, '-n', '2', '--harness', 'null', '--run-dir', runDir];
    expect((await troupe([...first, '--allow-failures'])).code).toBe(0);
    const resumed = await troupe(['eval', '--run-dir', runDir, '--resume']);
    expect(resumed.stderr).not.toMatch(/--run-dir names a new run/);
    expect(resumed.code).toBe(0);
    expect(readFileSync(join(runDir, 'traces.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
    const missing = await troupe(['eval', '--resume']);
    expect(missing.code).toBe(2);
  });
});
