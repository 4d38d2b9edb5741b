import { existsSync, mkdtempSync, readdirSync, readFileSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seededRandom } from '../../../src/testing/fault-injection.ts';
import { ScriptedModelServer } from '../../../src/testing/scripted-model-server.ts';
import { answerOf } from './arithmetic-script.ts';
import { runCli, sleep, tracesLines } from './troupe-cli.ts';

export interface CrashLoopOptions {
  /** SIGKILLs to deliver before the final, uninterrupted `--resume`. */
  kills: number;
  seed: number;
  tasks: number;
  rollouts: number;
  /** After these kills (1-based), the last line of traces.jsonl is torn in half, as a crash mid-write leaves it. */
  tearAfter: number[];
}

export interface CrashLoopResult {
  runDir: string;
  expected: number;
  /** SIGKILLs delivered, and where: `after N episodes` or `at T ms`. */
  kills: string[];
  /** Lines torn by the test, and resumes that reported dropping a torn line. */
  torn: number;
  tornDetected: number;
  /** Episodes on disk after the final resume, and their distinct `task#index` keys. */
  lines: number;
  distinctKeys: number;
  okEpisodes: number;
  correctEpisodes: number;
  finalExitCode: number | null;
  finalOutput: string;
  /** Lines that are not valid JSON after the final resume. */
  unparsable: number;
}

/**
 * `troupe eval` under repeated SIGKILL: the first run and each `--resume` are killed at a random
 * point (after a random number of new episodes landed, or after a random delay, which can fall in
 * start-up or in the resume's own rewrite), optionally with the last line torn, then a final
 * `--resume` runs to the end.
 */
export async function runCrashLoop(options: CrashLoopOptions): Promise<CrashLoopResult> {
  const random = seededRandom(options.seed);
  const server = await ScriptedModelServer.start({ latencyMs: 40, keepLog: false, script: (request) => answerOf(request) });
  const outputs = mkdtempSync(join(tmpdir(), 'troupe-crash-'));
  const expected = options.tasks * options.rollouts;
  const args = [
    'eval',
    '-m',
    'scripted-model',
    '-b',
    server.baseUrl,
    '-n',
    String(options.tasks),
    '-r',
    String(options.rollouts),
  ];
  const first = [...args, '-c', '4', '--harness', 'null', '-o', outputs];
  const kills: string[] = [];
  let torn = 0;
  let tornDetected = 0;
  let runDir = '';
  try {
    for (let k = 1; k <= options.kills; k++) {
      const run = runCli({ args: runDir ? ['eval', '--resume', runDir] : first });
      const before = runDir ? tracesLines(runDir).complete.length : 0;
      const byTime = runDir !== '' && random() < 0.3;
      // Kept short so that, on a fast idle machine, the run is still going when the kill comes.
      const delayMs = 150 + Math.floor(random() * 600);
      const target = before + 1 + Math.floor(random() * 5);
      const startedAt = Date.now();
      let exited = false;
      void run.done.then(() => (exited = true));
      for (;;) {
        if (exited) break;
        if (!runDir && existsSync(outputs)) {
          const name = readdirSync(outputs)[0];
          if (name && existsSync(join(outputs, name, 'config.json'))) runDir = join(outputs, name);
        }
        if (byTime && Date.now() - startedAt >= delayMs) break;
        if (!byTime && runDir && tracesLines(runDir).complete.length >= target) break;
        if (Date.now() - startedAt > 120_000) throw new Error(`kill ${k}: the run made no progress in 120 s`);
        await sleep(5);
      }
      if (exited) throw new Error(`kill ${k}: troupe eval finished before it could be killed; use more tasks`);
      run.child.kill('SIGKILL');
      const result = await run.done;
      if (result.signal !== 'SIGKILL')
        throw new Error(`kill ${k}: expected death by SIGKILL, got ${result.code}/${result.signal}`);
      if (/resume: moving line \d+ of traces\.jsonl to traces\.rejected\.jsonl/.test(result.stderr)) tornDetected++;
      kills.push(byTime ? `at ${Date.now() - startedAt} ms` : `after ${tracesLines(runDir).complete.length} episodes`);
      if (options.tearAfter.includes(k)) {
        const path = join(runDir, 'traces.jsonl');
        const text = readFileSync(path, 'utf8');
        const body = text.endsWith('\n') ? text.slice(0, -1) : text;
        const lastStart = body.lastIndexOf('\n') + 1;
        // Cut the last line in half: its episode was "being written" when the process died.
        truncateSync(path, Buffer.byteLength(text.slice(0, lastStart + Math.floor((body.length - lastStart) / 2))));
        torn++;
      }
    }
    const final = await runCli({ args: ['eval', '--resume', runDir] }).done;
    if (/resume: moving line \d+ of traces\.jsonl to traces\.rejected\.jsonl/.test(final.stderr)) tornDetected++;
    const { complete, tornTail } = tracesLines(runDir);
    let unparsable = tornTail ? 1 : 0;
    const episodes: {
      ok: boolean;
      task: { key: string };
      group: { index: number };
      traces: { rewards: Record<string, { score: number } | null> }[];
    }[] = [];
    for (const line of complete) {
      try {
        episodes.push(JSON.parse(line));
      } catch {
        unparsable++;
      }
    }
    return {
      runDir,
      expected,
      kills,
      torn,
      tornDetected,
      lines: complete.length,
      distinctKeys: new Set(episodes.map((e) => `${e.task.key}#${e.group.index}`)).size,
      okEpisodes: episodes.filter((e) => e.ok).length,
      correctEpisodes: episodes.filter((e) => e.traces[0]?.rewards.correct?.score === 1).length,
      finalExitCode: final.code,
      finalOutput: `${final.stdout}\n${final.stderr}`.slice(-3000),
      unparsable,
    };
  } finally {
    await server.close();
  }
}
