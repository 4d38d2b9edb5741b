import { installForIntegrationTest, runShellToolScenario } from '@troupe/harness-kit';
import { runHarnessConformance } from '@troupe/verifiers/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { CODEX_PROGRAM, CodexHarness } from './codex-harness.ts';

// Runs the real Codex CLI (installed from npm into ~/.cache/troupe/harnesses once) in a
// local sandbox against the scripted model behind interception.
describe('codex against the real CLI', () => {
  const harness = new CodexHarness({ allowLocal: true, timeoutMs: 240_000 });
  let unavailable: string | null = null;

  beforeAll(async () => {
    unavailable = await installForIntegrationTest({ harness, packageName: CODEX_PROGRAM.packageName, timeoutMs: 600_000 });
  }, 660_000);

  it('runs the shell command the model asks for, streaming, and sends the result back', async (context) => {
    if (unavailable) context.skip(unavailable);
    const outcome = await runShellToolScenario({
      harness,
      toolName: 'exec_command',
      toolArguments: { cmd: 'echo hello > probe.txt' },
      fileName: 'probe.txt',
    });
    expect(outcome.run.result.exitCode).toBe(0);
    expect(outcome.file).toBe('hello\n');
    expect(outcome.dialects).toEqual(['responses', 'responses']);
    expect(outcome.run.trace.calls[0]?.finishReason).toBe('tool_calls');
    expect(outcome.toolResult).toMatch(/Process exited with code 0/);
    expect(outcome.run.trace.lastReply).toBe('done');
    expect(JSON.stringify(outcome.run.trace.toJSON())).not.toContain(outcome.run.secret);
  }, 300_000);

  it('passes the harness conformance checks', async (context) => {
    if (unavailable) context.skip(unavailable);
    const checks = await runHarnessConformance({ harness, failureExit: true });
    expect(checks.filter((c) => !c.ok)).toEqual([]);
  }, 300_000);
});
