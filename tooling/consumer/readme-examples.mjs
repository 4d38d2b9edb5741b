// Consumer check (g): the README's examples, copied verbatim from README.md into this project and
// run from the installed packages: the makeAgent script (TypeScript, `npx tsx`), the writer-critic
// env under `npx troupe eval` (reward 1.7 for a correct draft rated 7), and the training config
// under `npx troupe train` (cut to 3 steps with --max-steps). The model is a scripted server on the
// README's own endpoint, http://127.0.0.1:8000/v1.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { ScriptedModelServer } from '@troupe/verifiers/testing';

const readme = readFileSync('README.troupe.md', 'utf8');

/** The first ```LANG block after `<!-- MARKER`, verbatim. */
function block(marker, lang) {
  const at = readme.indexOf(`<!-- ${marker}`);
  const found = at < 0 ? null : readme.slice(at).match(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``));
  if (!found) throw new Error(`README.md: no \`\`\`${lang} block after <!-- ${marker}`);
  return found[1];
}

function run(command, args) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, OPENAI_API_KEY: 'x' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((done) => child.on('close', (code) => done({ code, stdout, stderr })));
}

function expect(condition, what, result) {
  if (!condition) throw new Error(`consumer (g): ${what}\n--- stdout\n${result?.stdout}\n--- stderr\n${result?.stderr}`);
}

/** The README's scenarios: the agent looks a version up with one bash call; the writer answers arithmetic, the critic rates 7. */
function script(request) {
  const last = String(request.messages.at(-1)?.content ?? '');
  const tool = request.messages.findLast((m) => m.role === 'tool');
  if (request.messages.some((m) => String(m.content).includes('npm view zod version'))) {
    if (!tool) return { toolCalls: [{ name: 'bash', arguments: { command: 'echo "4.1.$((6 * 2))"' } }] };
    return { content: `The latest release of zod is ${String(tool.content).match(/\d+\.\d+\.\d+/)?.[0]}.` };
  }
  if (last.startsWith('Score 0-10')) return '7';
  const expression = last.match(/What is (.*)\?/)?.[1] ?? '0';
  return `The answer is ${Function(`return (${expression})`)()}`;
}

const server = await ScriptedModelServer.start({ port: 8000, script });
try {
  writeFileSync('agent.ts', block('readme-agent-script', 'ts'));
  const agent = await run('npx', ['tsx', 'agent.ts']);
  expect(agent.code === 0 && agent.stdout === 'The latest release of zod is 4.1.12.\n', 'the makeAgent script', agent);

  writeFileSync('writer-critic.ts', block('readme-writer-critic', 'ts'));
  const args = [
    'troupe',
    'eval',
    '--env',
    './writer-critic.ts',
    '-m',
    'm',
    '-b',
    server.baseUrl,
    '-n',
    '2',
    '--run-dir',
    'runs/writer-critic',
  ];
  const evaluated = await run('npx', args);
  expect(evaluated.code === 0, `npx ${args.join(' ')} exited ${evaluated.code}`, evaluated);
  const summary = JSON.parse(readFileSync('runs/writer-critic/summary.json', 'utf8'));
  expect(
    Math.abs(summary.byRole.writer.rewardMean - 1.7) < 1e-9,
    `writer reward ${summary.byRole.writer.rewardMean}, not 1.7`,
    evaluated,
  );
  expect(summary.byRole.critic.scored === 0, 'the critic was scored', evaluated);

  writeFileSync('run.toml', block('readme-train-config', 'toml'));
  const trained = await run('npx', ['troupe', 'train', '--config', 'run.toml', '--max-steps', '3', '--run-dir', 'runs/readme']);
  const steps = readFileSync('runs/readme/metrics.jsonl', 'utf8').trim().split('\n').length;
  expect(
    trained.code === 0 && steps === 3,
    `npx troupe train --config run.toml exited ${trained.code} after ${steps} steps`,
    trained,
  );
  console.log(
    '(g) ok: the README verbatim: makeAgent script (npx tsx), writer-critic reward 1.7 (npx troupe eval), run.toml (npx troupe train, 3 steps)',
  );
} finally {
  await server.close();
}
