import { installForIntegrationTest, runShellToolScenario } from '@troupe/harness-kit';
import { runHarnessConformance } from '@troupe/verifiers/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { PiHarness } from './pi-harness.ts';

// Runs the real pi CLI (installed from npm into ~/.cache/troupe/harnesses once) in a
// local sandbox against the scripted model behind interception.
describe('pi against the real CLI', () => {
  const harness = new PiHarness({ allowLocal: true, timeoutMs: 240_000 });
  let unavailable: string | null = null;

  beforeAll(async () => {
    unavailable = await installForIntegrationTest({ harness, packageName: PiHarness.installer.packageName, timeoutMs: 600_000 });
  }, 660_000);

  it('runs the shell command the model asks for, streaming, and sends the result back', async (context) => {
    if (unavailable) context.skip(unavailable);
    const outcome = await runShellToolScenario({
      harness,
      toolName: 'bash',
      toolArguments: { command: 'echo hello > probe.txt' },
      fileName: 'probe.txt',
    });
    expect(outcome.run.result.exitCode).toBe(0);
    expect(outcome.file).toBe('hello\n');
    expect(outcome.dialects).toEqual(['chat', 'chat']);
    expect(outcome.run.trace.calls[0]?.finishReason).toBe('tool_calls');
    expect(outcome.toolResult).toBe('(no output)');
    expect(outcome.run.trace.lastReply).toBe('done');
    expect(JSON.stringify(outcome.run.trace.toJSON())).not.toContain(outcome.run.secret);
  }, 300_000);

  it('passes the harness conformance checks', async (context) => {
    if (unavailable) context.skip(unavailable);
    const checks = await runHarnessConformance({ harness, failureExit: true });
    expect(checks.filter((c) => !c.ok)).toEqual([]);
  }, 300_000);
});
