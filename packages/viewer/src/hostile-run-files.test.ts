import { execFileSync } from 'node:child_process';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculatorEval, plantHostileFile } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';
import { loadViewerRun } from './run-directory.ts';
import { serveRun } from './serve-run.ts';

// A run directory may have been written by someone else: the viewer reads only regular files
// inside it, names what it refused, and never echoes a bad file's content.

const fresh = () => mkdtempSync(join(tmpdir(), 'troupe-viewer-hostile-'));

describe('the viewer on a hostile run directory', () => {
  it('refuses a traces.jsonl that is a FIFO or a symlink, without blocking', async () => {
    for (const kind of ['fifo', 'symlink'] as const) {
      const outDir = fresh();
      const tracesPath = join(outDir, 'traces.jsonl');
      plantHostileFile(tracesPath, kind, join(fresh(), 'secret.jsonl'));
      const message = kind === 'fifo' ? /traces.jsonl: not a regular file \(a FIFO\); refused/ : /traces.jsonl: a symlink/;
      await expect(loadViewerRun({ runDir: outDir })).rejects.toThrow(message);
    }
  });

  it('does not follow a symlinked config.json out of the run directory, nor echo a bad file', async () => {
    const outDir = fresh();
    await calculatorEval(outDir);
    const secret = join(fresh(), 'secret');
    writeFileSync(secret, 'root:SECRET-HASH:0:0');
    writeFileSync(join(outDir, 'summary.json'), 'root:SECRET-HASH:0:0');
    const config = join(outDir, 'config.json');
    execFileSync('rm', ['-f', config]);
    symlinkSync(secret, config);
    const run = await loadViewerRun({ runDir: outDir });
    expect(run.config).toBeNull();
    expect(run.warnings.join('\n')).toMatch(/config.json: unreadable \(.*a symlink/);
    expect(run.warnings.join('\n')).toMatch(/summary.json: not valid JSON \(/);
    expect(run.warnings.join('\n')).not.toContain('SECRET');
  });

  it('answers a malformed URI with 400, not 500', async () => {
    const outDir = fresh();
    await calculatorEval(outDir);
    const served = await serveRun({ runDir: outDir, port: 0 });
    try {
      for (const path of ['/api/episodes/%E0%A4%A', '/api/episodes/%']) {
        const response = await fetch(`${served.url.replace(/\/$/, '')}${path}`);
        expect(response.status).toBe(400);
      }
    } finally {
      await served.close();
    }
  });
});
