import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * Starts `scripted-model-process.ts` (a ScriptedModelServer answering after `latencyMs`) in its
 * own process, as a real model server would be, and resolves once it listens. End it by closing
 * its stdin (`child.stdin.end()`).
 */
export async function startModelProcess(latencyMs: number): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'scripted-model-process.ts'), String(latencyMs)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  for await (const line of lines) {
    const { url } = JSON.parse(line) as { url: string };
    return { url, child };
  }
  throw new Error('the scripted model process exited before listening');
}
