import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { SandboxError } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { DockerRuntime } from './docker-runtime.ts';

const socket = process.env.TROUPE_DOCKER_HOST?.replace(/^unix:\/\//, '');
const packageDir = join(import.meta.dirname, '..');
const cli = join(dirname(createRequire(import.meta.url).resolve('@troupe/verifiers/package.json')), 'src/cli/main.ts');
const missingSocket = () => join(tmpdir(), `troupe-no-engine-${randomBytes(4).toString('hex')}.sock`);

function troupe(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], {
    cwd: packageDir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_OPTIONS: process.env.NODE_OPTIONS ?? '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('docker runtime preflight', () => {
  it('names the socket and the cause when no engine answers there', async () => {
    const path = missingSocket();
    const error = await new DockerRuntime({ socketPath: path }).preflight().catch((caught: unknown) => caught);
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain(`docker: the engine at ${path} does not answer (ENOENT)`);
    expect((error as Error).message).toMatch(/docker\.socketPath/);
  });

  it('troupe eval exits 2 before creating a run directory when the runtime engine is down', async () => {
    const outputs = join(mkdtempSync(join(tmpdir(), 'troupe-preflight-')), 'outputs');
    const runtime = JSON.stringify({ id: 'docker', socket_path: missingSocket() });
    const result = await troupe([
      'eval',
      '-m',
      'm',
      '-b',
      'http://127.0.0.1:9/v1',
      '-n',
      '1',
      '--harness',
      'null',
      '-o',
      outputs,
      '--set',
      `env.agent.runtime=${runtime}`,
    ]);
    expect(result.stderr).toMatch(
      /env single-agent, role agent: runtime docker failed its preflight: docker: the engine at .* does not answer \(ENOENT\)/,
    );
    expect(result.code).toBe(2);
    expect(existsSync(outputs)).toBe(false);
  });

  it.skipIf(!socket)('passes against a running engine (TROUPE_DOCKER_HOST)', async () => {
    await expect(new DockerRuntime({ socketPath: socket as string }).preflight()).resolves.toBeUndefined();
  });
});
