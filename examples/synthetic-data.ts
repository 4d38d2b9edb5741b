/**
 * Synthetic data: best-of-n rollouts of a taskset, the best passing trace of each task kept,
 * written as SFT JSONL (Hugging Face TRL's `messages` shape, tool calls and results included).
 *
 *   tsx synthetic-data.ts --model Qwen/Qwen3-0.6B --base-url http://127.0.0.1:8000/v1 \
 *     --tasks 20 --best-of 4 --out sft.jsonl [--taskset tasks.jsonl] [--harness bash]
 *
 * Without --taskset it uses the built-in arithmetic taskset (its reward: 1 for the right integer).
 * Prints one line per task and a final count; exits 0 even when some tasks have no passing trace.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { arithmeticTaskset, makeAgent, Taskset, type Trace, toMessagesRecord } from '@troupe/verifiers';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    'base-url': { type: 'string', default: 'http://127.0.0.1:8000/v1' },
    taskset: { type: 'string' },
    tasks: { type: 'string', default: '10' },
    'best-of': { type: 'string', default: '4' },
    harness: { type: 'string', default: 'bash' },
    'pass-threshold': { type: 'string', default: '1' },
    out: { type: 'string', default: 'sft.jsonl' },
  },
});
if (!values.model) throw new Error('--model is required');
const bestOf = Number(values['best-of']);
const threshold = Number(values['pass-threshold']);
const taskset = values.taskset ? await Taskset.fromJsonl('tasks', values.taskset) : arithmeticTaskset({ size: 1000 });
const tasks = taskset.head(Math.min(Number(values.tasks), taskset.size)).toArray();

await using agent = await makeAgent({
  model: values.model,
  baseUrl: values['base-url'],
  apiKey: process.env.OPENAI_API_KEY ?? 'EMPTY',
  harness: values.harness,
  maxTurns: 8,
});

/** Highest reward first; among equals, the shorter conversation. */
const better = (a: Trace, b: Trace) => b.reward - a.reward || a.numTurns - b.numTurns;

const lines: string[] = [];
for (const task of tasks) {
  const traces = await Promise.all(Array.from({ length: bestOf }, () => agent.run(task)));
  const passing = traces.filter((t) => t.ok && t.reward >= threshold).sort(better);
  const best = passing[0];
  console.log(`${task.key}: ${passing.length}/${bestOf} passed${best ? `, kept reward ${best.reward}` : ', none kept'}`);
  if (!best) continue;
  const record = toMessagesRecord('sft', best, {
    run: 'synthetic-data',
    task: task.key,
    role: best.agent.name,
    reward: best.reward,
    trace: best.id,
    rollout: traces.indexOf(best),
    passed: passing.length,
    bestOf,
  });
  if (record) lines.push(JSON.stringify(record));
}
writeFileSync(values.out, lines.map((line) => `${line}\n`).join(''));
console.log(`kept ${lines.length} of ${tasks.length} tasks → ${values.out}`);
