import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { troupe } from '../../test/support/troupe-process.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';
import { firstDifference } from './eval-command.ts';

const root = resolve(import.meta.dirname, '../../../..');
const _cli = join(root, 'packages/verifiers/src/cli/main.ts');

/** A server that lists models but answers every chat call with `status` (or a malformed body). */
async function brokenServer(mode: { status: number } | 'malformed'): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model' }] }));
      } else if (mode === 'malformed') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"choices": [ {"message": ');
      } else {
        res.writeHead(mode.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'boom' } }));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/v1`, server };
}

describe('troupe eval exit codes and preflight', () => {
  let scripted: ScriptedModelServer;
  beforeAll(async () => {
    scripted = await ScriptedModelServer.start({
      script: (request) => {
        const expression = String(request.messages.at(-1)?.content).match(/What is (.*)\?/)?.[1] ?? '0';
        return `The answer is ${Function(`return (${expression})`)()}`;
      },
    });
  });
  afterAll(() => scripted.close());

  const base = (outputs: string) => [
    'eval',
    '-m',
    'm',
    '-n',
    '3',
    '--harness',
    'null',
    '-o',
    outputs,
    '--set',
    'client.maxRetries=0',
  ];

  it('exits 0 when every episode is ok', async () => {
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-exit-'));
    const result = await troupe([...base(outputs), '-b', scripted.url]);
    expect(result.stderr).not.toMatch(/episodes failed \(/);
    expect(result.code).toBe(0);
  });

  it('fails fast naming the URL when the endpoint is unreachable, and creates no run directory', async () => {
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-exit-'));
    const result = await troupe([...base(outputs), '-b', 'http://127.0.0.1:1/v1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('http://127.0.0.1:1/v1/models');
    expect(readdirSync(outputs)).toEqual([]);
  });

  it('exits 4 when every episode fails (HTTP 500), 0 with --allow-failures, and the error names the endpoint', async () => {
    const { url, server } = await brokenServer({ status: 500 });
    try {
      const outputs = mkdtempSync(join(tmpdir(), 'troupe-exit-'));
      const result = await troupe([...base(outputs), '-b', url]);
      expect(result.code).toBe(4);
      expect(result.stderr).toMatch(/3 of 3 episodes failed/);
      const [run] = readdirSync(outputs);
      const lines = readFileSync(join(outputs, String(run), 'traces.jsonl'), 'utf8');
      expect(lines).toContain(`[endpoint ${url}]`);
      const allowed = await troupe([...base(mkdtempSync(join(tmpdir(), 'troupe-exit-'))), '-b', url, '--allow-failures']);
      expect(allowed.code).toBe(0);
    } finally {
      server.close();
    }
  });

  it('exits 4 on malformed JSON bodies', async () => {
    const { url, server } = await brokenServer('malformed');
    try {
      const result = await troupe([...base(mkdtempSync(join(tmpdir(), 'troupe-exit-'))), '-b', url]);
      expect(result.code).toBe(4);
    } finally {
      server.close();
    }
  });

  it('exits 3 when some episodes fail', async () => {
    let calls = 0;
    const flaky = await ScriptedModelServer.start({
      script: () => (calls++ === 0 ? { error: { status: 400, message: 'bad request' } } : 'The answer is 0'),
    });
    try {
      const result = await troupe([...base(mkdtempSync(join(tmpdir(), 'troupe-exit-'))), '-b', flaky.url, '-c', '1']);
      expect(result.code).toBe(3);
    } finally {
      await flaky.close();
    }
  });

  it('a config rejected at the door leaves no run directory', async () => {
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-exit-'));
    const result = await troupe([...base(outputs), '-b', scripted.url, '--set', 'env.agent.maxTurns=-1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/env\.agent\.maxTurns/);
    expect(readdirSync(outputs)).toEqual([]);
  });

  it('--resume with a changed flag refuses naming the field; --resume alone continues', async () => {
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-exit-'));
    const first = await troupe([...base(outputs), '-b', scripted.url]);
    expect(first.code).toBe(0);
    const runDir = join(outputs, String(readdirSync(outputs)[0]));
    const changed = await troupe(['eval', '--resume', runDir, '-m', 'other-model']);
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(/model differs from the run's config.json/);
    const harness = await troupe(['eval', '--resume', runDir, '--harness', 'bash']);
    expect(harness.code).toBe(2);
    expect(harness.stderr).toMatch(/env\.agent\.harness differs/);
    const same = await troupe(['eval', '--resume', runDir]);
    expect(same.code).toBe(0);
    expect(JSON.parse(readFileSync(join(runDir, 'summary.json'), 'utf8')).model).toBe('m');
  });

  it.each([['eval'], ['validate']])('troupe %s --help prints the options and exits 0', async (command) => {
    const result = await troupe([command, '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/--allow-failures/);
    expect(result.stdout).toMatch(/Exit codes/);
  });

  it("troupe view --help runs @troupe/viewer's own help (linked at this repository's root) and exits 0", async () => {
    const result = await troupe(['view', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/troupe view <run-dir> \[--html FILE\]/);
  });
});

describe('firstDifference', () => {
  it('names the first differing dotted path', () => {
    expect(firstDifference({ a: 1, b: { c: 2 } }, { a: 1, b: { c: 3 } })).toBe('b.c');
    expect(firstDifference({ a: 1 }, { a: 1 })).toBeUndefined();
    expect(firstDifference({ a: [1] }, { a: [1, 2] })).toBe('a.1');
  });
});
