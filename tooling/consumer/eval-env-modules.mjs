// Consumer check (b): `npx troupe eval --env ./my-env.mjs` and `--env ./my-env.ts` run against the
// scripted model server on loopback and each write a run directory with traces.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { ScriptedModelServer } from '@troupe/verifiers/testing';

function run(args) {
  const child = spawn('npx', args, { env: { ...process.env, OPENAI_API_KEY: 'x' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  child.stdout.resume();
  return new Promise((done) => child.on('close', (code) => done({ code, stderr })));
}

const server = await ScriptedModelServer.start({ script: () => 'The answer is 4' });
try {
  for (const file of ['./my-env.mjs', './my-env.ts']) {
    const out = `outputs-${file.slice(2).replace('.', '-')}`;
    const { code, stderr } = await run([
      'troupe',
      'eval',
      '--env',
      file,
      '-m',
      'm',
      '-b',
      server.baseUrl,
      '-n',
      '2',
      '--harness',
      'null',
      '-o',
      out,
    ]);
    if (code !== 0) throw new Error(`troupe eval --env ${file} exited ${code}:\n${stderr}`);
    const dirs = existsSync(out) ? readdirSync(out) : [];
    const traces = dirs.length === 1 ? `${out}/${dirs[0]}/traces.jsonl` : '';
    if (!traces || !existsSync(traces)) throw new Error(`troupe eval --env ${file}: no run directory in ${out}`);
    const episodes = readFileSync(traces, 'utf8').trim().split('\n').length;
    console.log(`(b) ok: troupe eval --env ${file} wrote ${out}/${dirs[0]} (${episodes} episodes)`);
  }
} finally {
  await server.close();
}
