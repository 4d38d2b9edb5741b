import type { Harness } from '@troupe/verifiers';
import { runHarnessConformance, runRecordedHarnessConformance } from '@troupe/verifiers/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import type { HarnessInfo } from './cli-harness.ts';
import { installForIntegrationTest, runShellToolScenario } from './shell-tool-scenario.ts';

// The judge harness suite.
export { describeAgenticJudgeHarness, type JudgeHarnessClass } from './describe-judge-harness.ts';
// The MCP harness suite.
export { describeMcpHarness, type McpHarnessClass } from './describe-mcp-harness.ts';

/** A harness class as {@link describeRecordedHarness} needs it (what `defineProgramHarness` returns). */
export interface RecordedHarnessClass {
  new (): Harness & { info: { testedForReal: boolean } };
  readonly id: string;
  readonly createHarness: (options?: unknown) => Harness;
}

/**
 * The recorded tests of a harness whose program is installed inside the sandbox and not run by
 * the tests (its downloads are out of reach): against a recording sandbox it installs the pinned
 * program (every `install` string is in the install commands) once per sandbox under a marker,
 * launches it wired to interception (every `launch` string in the launch command) with no upload,
 * declares a container-only program that executes code, and rejects an unknown option naming the
 * field. `more` adds the harness's own cases inside the same `describe`.
 */
export function describeRecordedHarness(options: {
  harness: RecordedHarnessClass;
  install: string[];
  launch: string[];
  more?: () => void;
}): void {
  const { harness: HarnessClass } = options;
  describe(`${HarnessClass.id} (recorded, not run by the tests)`, () => {
    it('installs the pinned program and launches it wired to interception', async () => {
      const { checks, sandbox } = await runRecordedHarnessConformance({
        harness: new HarnessClass(),
        expect: { install: options.install, launch: options.launch },
      });
      expect(checks.filter((check) => !check.ok)).toEqual([]);
      expect(sandbox.uploads).toEqual([]);
    });

    it('installs once per sandbox (a marker guards the install script)', async () => {
      const { sandbox } = await runRecordedHarnessConformance({ harness: new HarnessClass(), expect: { install: [] } });
      const install = sandbox.commandLines.find((line) => line.includes(`.installed-${HarnessClass.id}-`));
      expect(install).toMatch(/if \[ -e /);
    });

    it('declares a container-only program that executes code', () => {
      const harness = new HarnessClass();
      expect(harness.capabilities.needsContainer).toBe(true);
      expect(harness.capabilities.executesCode).toBe(true);
      expect(harness.info.testedForReal).toBe(false);
    });

    it('rejects unknown options naming the field', () => {
      expect(() => HarnessClass.createHarness({ nonsense: 1 })).toThrow(new RegExp(`harness ${HarnessClass.id}: options`));
    });

    options.more?.();
  });
}

/** An npm-program harness class as {@link describeRealCliHarness} needs it. */
export interface RealCliHarnessClass {
  new (options: { allowLocal: boolean; timeoutMs: number }): Harness & { info: HarnessInfo };
  readonly id: string;
  readonly installer: { readonly packageName: string };
}

/**
 * The real-CLI tests of an npm-program harness: the program is installed from npm into the host
 * cache once (skipped, with the reason, when npm is out of reach) and run in a local sandbox
 * against the scripted model behind interception. It runs the shell command the model asks for
 * (`toolName` with `toolArguments` writes `probe.txt`), sends the tool result (`toolResult`) back
 * in its own dialect, finishes with the model's `done`, never leaks the rollout secret into the
 * trace, and passes the harness conformance checks.
 */
export function describeRealCliHarness(options: {
  harness: RealCliHarnessClass;
  toolName: string;
  toolArguments: Record<string, unknown>;
  toolResult: string | RegExp;
  /** Whether the conformance checks include a failing run's exit (default true). */
  failureExit?: boolean;
  /**
   * The shell call's arguments that write the command's environment (`env`) to `env.txt`: when
   * given, a test checks the program's commands run without its rollout secret in their environment.
   */
  envToolArguments?: Record<string, unknown>;
  /** The harness's `timeoutMs` (default 240 s) and each test's timeout (default 300 s). */
  runTimeoutMs?: number;
  testTimeoutMs?: number;
}): void {
  const { harness: HarnessClass } = options;
  const testTimeoutMs = options.testTimeoutMs ?? 300_000;
  describe(`${HarnessClass.id} against the real CLI`, () => {
    const harness = new HarnessClass({ allowLocal: true, timeoutMs: options.runTimeoutMs ?? 240_000 });
    const packageName = HarnessClass.installer.packageName;
    let unavailable: string | null = null;

    beforeAll(async () => {
      unavailable = await installForIntegrationTest({ harness, packageName, timeoutMs: 600_000 });
    }, 660_000);

    it(
      'runs the shell command the model asks for, streaming, and sends the result back',
      async (context) => {
        if (unavailable) context.skip(unavailable);
        const { toolName, toolArguments } = options;
        const outcome = await runShellToolScenario({ harness, toolName, toolArguments, fileName: 'probe.txt' });
        expect(outcome.run.result.exitCode).toBe(0);
        expect(outcome.file).toBe('hello\n');
        expect(outcome.dialects).toEqual([harness.info.dialect, harness.info.dialect]);
        expect(outcome.run.trace.calls[0]?.finishReason).toBe('tool_calls');
        if (typeof options.toolResult === 'string') expect(outcome.toolResult).toBe(options.toolResult);
        else expect(outcome.toolResult).toMatch(options.toolResult);
        expect(outcome.run.trace.lastReply).toBe('done');
        expect(JSON.stringify(outcome.run.trace.toJSON())).not.toContain(outcome.run.secret);
      },
      testTimeoutMs,
    );

    it.runIf(options.envToolArguments !== undefined)(
      "runs the program's commands without its rollout secret in their environment",
      async (context) => {
        if (unavailable) context.skip(unavailable);
        const toolArguments = options.envToolArguments as Record<string, unknown>;
        const outcome = await runShellToolScenario({ harness, toolName: options.toolName, toolArguments, fileName: 'env.txt' });
        expect(outcome.run.result.exitCode).toBe(0);
        // The command ran and printed its environment (HOME is the program's own), without the secret.
        expect(outcome.file).toMatch(/^HOME=/m);
        expect(outcome.run.secret).toMatch(/^rs-/);
        expect(outcome.file).not.toContain(outcome.run.secret);
      },
      testTimeoutMs,
    );

    it(
      'passes the harness conformance checks',
      async (context) => {
        if (unavailable) context.skip(unavailable);
        const checks = await runHarnessConformance({ harness, failureExit: options.failureExit ?? true });
        expect(checks.filter((c) => !c.ok)).toEqual([]);
      },
      testTimeoutMs,
    );
  });
}
