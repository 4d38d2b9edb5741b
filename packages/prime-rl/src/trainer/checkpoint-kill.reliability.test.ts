import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { findRunCheckpoint, loadCheckpoint } from './checkpoint.ts';

const fixture = fileURLToPath(new URL('./__fixtures__/commit-checkpoints.ts', import.meta.url));
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Runs the committer from `from` and SIGKILLs it `delayMs` after its first commit; the last step it reported. */
function commitThenKill(out: string, from: number, delayMs: number): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, out, String(from)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let last = from - 1;
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      for (const m of String(d).matchAll(/committed (\d+)/g)) {
        if (last < from) setTimeout(() => child.kill('SIGKILL'), delayMs);
        last = Math.max(last, Number(m[1]));
      }
    });
    child.on('close', (code, signal) => (signal === 'SIGKILL' ? resolve(last) : reject(new Error(`exited ${code}: ${stderr}`))));
  });
}

describe('checkpoints under SIGKILL (CI size)', () => {
  it('killed at random points of its commits eight times, the run always has a complete checkpoint at or after the last one reported', async () => {
    const out = mkdtempSync(join(tmpdir(), 'troupe-checkpoint-kill-'));
    dirs.push(out);
    let from = 1;
    for (let kill = 0; kill < 8; kill++) {
      const reported = await commitThenKill(out, from, Math.floor(Math.random() * 120));
      const found = await findRunCheckpoint({ out });
      expect(found).not.toBeNull();
      const checkpoint = await loadCheckpoint({ dir: found as string });
      // Reported means committed: the pointer names that step or a later one whose commit had begun swapping.
      expect(checkpoint.step).toBeGreaterThanOrEqual(reported);
      expect(checkpoint.weights[0]?.data[0]).toBe(checkpoint.step);
      for (const kept of readdirSync(out).filter((n) => /^checkpoint-step-\d+$/.test(n)))
        expect((await loadCheckpoint({ dir: join(out, kept) })).step).toBe(Number(kept.slice('checkpoint-step-'.length)));
      from = checkpoint.step + 1;
    }
  });
});
