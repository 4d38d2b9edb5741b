import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { troupe } from '../../test/support/troupe-process.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';

const root = resolve(import.meta.dirname, '../../../..');
const _cli = join(root, 'packages/verifiers/src/cli/main.ts');

/** Runs the CLI with stdout and stderr both piped (as a script or CI log would). */

describe('troupe eval output at high concurrency', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await ScriptedModelServer.start({
      script: (request) => {
        const expression = String(request.messages.at(-1)?.content).match(/What is (.*)\?/)?.[1] ?? '0';
        return `The answer is ${Function(`return (${expression})`)()}`;
      },
    });
  });
  afterAll(() => server.close());

  it('-c 16: no MaxListenersExceededWarning, and the summary is printed once with both streams piped', async () => {
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-c16-'));
    const result = await troupe([
      'eval',
      '-m',
      'm',
      '-b',
      server.baseUrl,
      '-n',
      '40',
      '-c',
      '16',
      '--harness',
      'null',
      '-o',
      outputs,
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(/MaxListenersExceededWarning|memory leak/);
    const both = result.stdout + result.stderr;
    expect(both.match(/^episodes 40 \(ok 40, failed 0\)/gm)).toHaveLength(1);
    expect(both.match(/agent: reward mean/g)).toHaveLength(1);
  });
});
