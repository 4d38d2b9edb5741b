import { installForIntegrationTest, runShellToolScenario } from '@troupe/harness-kit';
import { runHarnessConformance } from '@troupe/verifiers/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { OpenClawHarness } from './openclaw-harness.ts';

// Runs the real OpenClaw CLI (on Node 24 from npm) (installed from npm into ~/.cache/troupe/harnesses once) in a
// local sandbox against the scripted model behind interception.
describe('openclaw against the real CLI', () => {
  const harness = new OpenClawHarness({ allowLocal: true, timeoutMs: 400_000 });
  let unavailable: string | null = null;

  beforeAll(async () => {
    unavailable = await installForIntegrationTest({
      harness,
      packageName: OpenClawHarness.installer.packageName,
      timeoutMs: 600_000,
    });
  }, 660_000);

  // OpenClaw takes about a minute per run on a busy 2-core machine (plugin and session setup).
  it('runs the shell command the model asks for, streaming, and sends the result back', async (context) => {
    if (unavailable) context.skip(unavailable);
    const outcome = await runShellToolScenario({
      harness,
      toolName: 'exec',
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
  }, 480_000);

  it('passes the harness conformance checks', async (context) => {
    if (unavailable) context.skip(unavailable);
    const checks = await runHarnessConformance({ harness });
    expect(checks.filter((c) => !c.ok)).toEqual([]);
  }, 480_000);
});
