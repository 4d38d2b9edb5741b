import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { troupe } from '../../test/support/troupe-process.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';

const fixture = join(import.meta.dirname, '__fixtures__', 'tool-env.ts');

describe('troupe eval: a task that declares tools meets a harness without MCP at the door', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await ScriptedModelServer.start({ script: () => 'hi' });
  });
  afterAll(() => server.close());

  const evalArgs = (outputs: string, ...extra: string[]) => [
    'eval',
    '--env',
    fixture,
    '-m',
    'm',
    '-b',
    server.baseUrl,
    '-o',
    outputs,
    ...extra,
  ];

  it('exits 2 before any episode, naming the harnesses, the task and its taskset; nothing is called or created', async () => {
    const outputs = join(mkdtempSync(join(tmpdir(), 'troupe-door-')), 'outputs');
    const result = await troupe(evalArgs(outputs, '--harness', 'null'));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'no role of env tool-fixture has a harness that supports MCP (solver: "null", critic: "null"), but task "needs-add" of taskset tool-fixture-tasks declares tools (1)',
    );
    expect(result.stdout).toBe('');
    expect(server.requests).toHaveLength(0); // not even the preflight
    expect(existsSync(outputs)).toBe(false);
    const validate = await troupe(['validate', '--env', fixture, '-m', 'm', '--harness', 'null']);
    expect(validate.code).toBe(2);
    expect(validate.stderr).toContain('task "needs-add"');
  });

  it('lets the run through when the tool task is not run (-n 1) or a role can serve the tools (bash)', async () => {
    const outputs = join(mkdtempSync(join(tmpdir(), 'troupe-door-')), 'outputs');
    const first = await troupe(evalArgs(outputs, '--harness', 'null', '-n', '1', '--dry-run'));
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/dry run: 1 tasks/);
    const served = await troupe(evalArgs(outputs, '--dry-run'));
    expect(served.stderr).toBe('');
    expect(served.code).toBe(0);
    expect(served.stdout).toMatch(/dry run: 2 tasks/);
  });
});
