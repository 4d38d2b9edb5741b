// Consumer check (f): `npx troupe train` in a project that ran a plain `npm install` of
// @troupe/verifiers, @troupe/prime-rl and @troupe/trainer: the user's .ts env trains and its reward
// rises on the default engine (onnxruntime-web, nothing downloaded), and every exit code a script
// reads is the documented one: 0, 2 (nothing written), 3, 4 (naming the user's file and line), 130.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** `npx troupe ARGS…` in its own process group; resolves with the exit code and the output. */
function troupe(args, { onStdout } = {}) {
  const child = spawn('npx', ['troupe', ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
    onStdout?.(child, stdout);
  });
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((done) => child.on('close', (code, signal) => done({ code: code ?? signal, stdout, stderr })));
}

function expect(condition, what, result) {
  if (condition) return;
  const output = result ? `\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}` : '';
  throw new Error(`consumer (f): ${what}${output}`);
}

const metrics = (dir) =>
  readFileSync(`${dir}/metrics.jsonl`, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

// The default engine is a plain dependency: onnxruntime-node (whose install script downloads) is not installed.
let native = true;
try {
  createRequire(import.meta.url).resolve('onnxruntime-node');
} catch {
  native = false;
}
expect(!native, 'onnxruntime-node was installed: its install script downloads from nuget');

// 0: the user's .ts env trains and its reward rises.
const ok = await troupe(['train', '--config', 'say.toml', '--run-dir', 'runs/say']);
expect(ok.code === 0, `troupe train exited ${ok.code}, not 0`, ok);
expect(/inference: onnxruntime-web/.test(ok.stderr), 'the run did not use onnxruntime-web', ok);
const rewards = metrics('runs/say').map((m) => m['train/say-colour/speaker/reward/mean']);
const [first, last] = [mean(rewards.slice(0, 3)), mean(rewards.slice(-3))];
expect(rewards.length === 40 && last > first + 0.5, `reward did not rise: ${rewards.map((r) => r.toFixed(2)).join(' ')}`, ok);
expect(/wrote runs\/say\/\{metrics\.jsonl,report\.html,checkpoint\/\}/.test(ok.stdout), 'the closing line', ok);
console.log(`(f) ok: npx troupe train ./say-env.ts, 40 steps: reward ${first.toFixed(2)} → ${last.toFixed(2)}, exit 0`);

// 2: bad config, bad flag, missing file, misspelt command, a run dir that holds a run — nothing written.
const refusals = [
  [['train', '--config', 'say.toml', '--run-dir', 'runs/bad', '--set', 'max_steps=-1'], /^troupe: max_steps: /],
  [['train', '--config', 'missing.toml', '--run-dir', 'runs/bad'], /^troupe: --config: file .*missing\.toml does not exist/],
  [['train', '--config', 'say.toml', '--run-dir', 'runs/bad', '--max-step', '3'], /^troupe: Unknown option '--max-step'/],
  [['trian'], /^troupe: unknown command "trian" \(did you mean "train"\?\)/],
  [
    ['train', '--config', 'say.toml', '--run-dir', 'runs/say'],
    /already holds a run \(--resume continues it; --clean replaces it\)/,
  ],
];
for (const [args, message] of refusals) {
  const refused = await troupe(args);
  expect(refused.code === 2 && message.test(refused.stderr), `troupe ${args.join(' ')}: not exit 2 with ${message}`, refused);
  expect(!/\n\s+at /.test(refused.stderr), `troupe ${args.join(' ')} printed a stack`, refused);
}
expect(!existsSync('runs/bad'), 'a refused run wrote its run directory');
console.log(
  `(f) ok: exit 2 for ${refusals.length} refusals (bad field, missing --config file, unknown flag, "trian", a run dir holding a run); nothing written`,
);

// 3: some episodes failed; the closing line says so and names no checkpoint with checkpoint_every = 0.
const some = ['--config', 'say.toml', '--set', 'max_steps=3', '--set', 'train.source.0.options={"fail":"some"}'];
const partly = await troupe(['train', ...some, '--run-dir', 'runs/some', '--set', 'checkpoint_every=0']);
expect(partly.code === 3 && /\d+ episode\(s\) failed/.test(partly.stdout), `some failed: exit ${partly.code}, not 3`, partly);
expect(
  /wrote runs\/some\/\{metrics\.jsonl,report\.html\} \(no checkpoint/.test(partly.stdout),
  'closing line names a checkpoint',
  partly,
);
expect(!existsSync('runs/some/checkpoint'), 'checkpoint_every = 0 wrote a checkpoint');

// 4: every episode fails; the error names the user's file and line.
const all = ['--set', 'groups_per_step=1', '--set', 'train.source.0.options={"fail":"all"}'];
const stopped = await troupe(['train', '--config', 'say.toml', ...all, '--run-dir', 'runs/all']);
expect(stopped.code === 4 && /TrainingStoppedError: /.test(stopped.stderr), `all failed: exit ${stopped.code}, not 4`, stopped);
const throwLine =
  readFileSync('say-env.ts', 'utf8')
    .split('\n')
    .findIndex((line) => line.includes('throw new Error(')) + 1;
expect(
  stopped.stderr.includes(`say-env.ts:${throwLine}:`),
  `exit 4 does not name the user's file and line (say-env.ts:${throwLine})`,
  stopped,
);

// 130: Ctrl-C (SIGINT to the process group, as a terminal sends it) stops at a step boundary.
let sent = false;
const interrupted = await troupe(['train', '--config', 'say.toml', '--set', 'max_steps=100000', '--run-dir', 'runs/int'], {
  onStdout: (child, stdout) => {
    if (sent || !/step \d+\/100000/.test(stdout)) return;
    sent = true;
    process.kill(-child.pid, 'SIGINT');
  },
});
// npx re-raises the signal its child ended on, which a shell reports as 130 too; the step finishes first.
const graceful = /troupe: interrupted after step \d+(; --resume continues|, before any checkpoint was written)/.test(
  interrupted.stderr,
);
expect(
  [130, 'SIGINT'].includes(interrupted.code) && graceful,
  `SIGINT: exit ${interrupted.code}, not 130 after the step`,
  interrupted,
);
expect(metrics('runs/int').length >= 1, 'SIGINT: no metrics were kept');
console.log(
  '(f) ok: exit 3 (some episodes failed; no checkpoint/ claimed), 4 (every episode failed; the line of the throw in say-env.ts named), 130 (SIGINT)',
);
