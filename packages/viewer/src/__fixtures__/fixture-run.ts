import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AssistantMessage, Message, ToolCall } from '@troupe/verifiers';
import type { ModelResponse, Usage } from '@troupe/verifiers';
import { Episode } from '@troupe/verifiers';
import { Trace } from '@troupe/verifiers';
import { seededRandom } from '@troupe/verifiers/random';

/**
 * Builds realistic run directories for the viewer's tests and benchmark, with the real Trace and
 * Episode classes (every model turn goes through `Trace.recordCall`), then writes them as a
 * `troupe eval` run does: `traces.jsonl`, `config.json`, `summary.json`, `logs/`.
 */

/** The core's seeded PRNG, so fixtures and screenshots are stable. */
const random = seededRandom;

const BASE_TIME = Date.UTC(2025, 5, 1, 9, 0, 0);

/** Records one model turn on `trace` through `Trace.recordCall`, with usage and timing. */
class Conversation {
  readonly history: Message[];
  private clock: number;
  private calls = 0;

  constructor(
    readonly trace: Trace,
    readonly model: string,
    start: Message[],
    startedAt: number,
  ) {
    this.history = [...start];
    this.clock = startedAt;
    trace.startedAt = startedAt;
  }

  /** The model replies (recorded as a sampled node with a ModelCall). */
  reply(message: Omit<AssistantMessage, 'role'>, options: { durationMs?: number; finish?: ModelResponse['finishReason'] } = {}) {
    const assistant: AssistantMessage = { role: 'assistant', ...message };
    const promptChars = this.history.reduce((n, m) => n + JSON.stringify(m).length, 0);
    const completionChars = JSON.stringify(assistant).length;
    const usage: Usage = {
      promptTokens: Math.ceil(promptChars / 4),
      completionTokens: Math.ceil(completionChars / 4),
      cost: Number(((promptChars / 4) * 0.15e-6 + (completionChars / 4) * 0.6e-6).toFixed(8)),
    };
    if (message.reasoning) usage.reasoningTokens = Math.ceil(message.reasoning.length / 4);
    const durationMs = options.durationMs ?? 400 + ((this.calls * 137) % 900);
    this.trace.recordCall(
      { model: this.model, messages: [...this.history], sampling: { temperature: 1, maxTokens: 4096 } },
      {
        id: `resp-${this.trace.id}-${this.calls}`,
        model: this.model,
        message: assistant,
        finishReason: options.finish ?? (message.toolCalls?.length ? 'tool_calls' : 'stop'),
        usage,
      },
      { dialect: 'openai-chat', startedAt: this.clock, durationMs },
    );
    this.calls++;
    this.clock += durationMs + 50;
    this.history.push(assistant);
    return this;
  }

  /** A failed model call (the prompt still lands in the graph). */
  fail(error: Error, durationMs = 30_000) {
    this.trace.recordFailedCall({ model: this.model, messages: [...this.history], sampling: { temperature: 1 } }, error, {
      dialect: 'openai-chat',
      startedAt: this.clock,
      durationMs,
    });
    this.clock += durationMs;
    return this;
  }

  /** A tool result or user turn appended to the history (lands in the graph with the next call). */
  add(message: Message) {
    this.history.push(message);
    return this;
  }

  /** Ends the trace: stop condition and end time. */
  end(stop: string) {
    this.trace.stop(stop);
    this.trace.isCompleted = stop === 'agent_completed';
    this.trace.endedAt = this.clock;
    this.trace.timing = { agent: this.clock - (this.trace.startedAt ?? this.clock) };
    return this.trace;
  }
}

function toolCall(id: string, name: string, args: Record<string, unknown>): ToolCall {
  return { id, name, arguments: JSON.stringify(args) };
}

function named(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

function task(key: string, data: Record<string, unknown>) {
  return { key, hash: `h${key.replace(/[^a-z0-9]/gi, '').slice(0, 12)}`, data };
}

const SOLVER_SYSTEM =
  'You are a careful engineer working in a Linux sandbox. Use the bash tool to run code. Verify before you answer.';

/** A solver that runs code, then a judge that re-runs it and records `info.verdict`. */
export function judgeEpisode(options: { index: number; rollout: number; solved: boolean; start: number; id?: string }): Episode {
  const { index, rollout, solved, start } = options;
  const n = 20 + index * 7;
  const expected = (n * (n + 1)) / 2;
  const claimed = solved ? expected : expected + n;
  const t = task(`sum-to-${n}`, {
    question: `What is the sum of the integers from 1 to ${n}? Write sum.py and report the number.`,
    answer: expected,
  });
  const episode = new Episode({
    id: options.id ?? `judge-${index}-${rollout}`,
    env: { id: 'agentic-judge' },
    task: t,
    group: { id: `g-judge-${index}`, index: rollout },
  });
  episode.startedAt = start;

  const solver = new Trace({
    id: `${episode.id}-solver`,
    task: t,
    agent: { name: 'solver', trainable: true, model: 'qwen3-4b', harness: 'bash', runtime: 'docker' },
  });
  const s = new Conversation(
    solver,
    'qwen3-4b',
    [
      { role: 'system', content: SOLVER_SYSTEM },
      { role: 'user', content: String(t.data.question) },
    ],
    start,
  );
  s.reply({
    content: 'I will write a short script and run it.',
    reasoning: `The closed form is n(n+1)/2 = ${expected}, but the task asks for a script, so I will compute it with a loop and compare.`,
    toolCalls: [
      toolCall('call_1', 'bash', {
        command: `cat > sum.py <<'EOF'\ntotal = 0\nfor i in range(1, ${solved ? n + 1 : n + 2}):\n    total += i\nprint(total)\nEOF\npython3 sum.py`,
      }),
    ],
  });
  s.add({ role: 'tool', toolCallId: 'call_1', content: `${solved ? expected : expected + n + 1}\n` });
  if (!solved) {
    s.reply({ content: null, toolCalls: [toolCall('call_2', 'bash', { command: 'python3 -c "print(sum(range(1, 100)))"' })] });
    s.add({ role: 'tool', toolCallId: 'call_2', content: '4950\n' });
  }
  s.reply({ content: `sum.py prints ${claimed}. The sum of the integers from 1 to ${n} is **${claimed}**.` });
  s.end('agent_completed');
  solver.recordReward('correct', solved ? 1 : 0, 0);
  solver.recordReward('judge', solved ? 1 : 0, 1);
  solver.recordMetric('judge/solved', solved ? 1 : 0);
  solver.recordMetric('judge/explained', solved ? 1 : 0.5);
  solver.recordMetric('num_tool_calls', solved ? 1 : 2);
  solver.info = { artifacts: ['sum.py'] };

  const judge = new Trace({
    id: `${episode.id}-judge`,
    task: t,
    agent: { name: 'judge', trainable: false, model: 'qwen3-4b', harness: 'bash', runtime: 'docker' },
  });
  const j = new Conversation(
    judge,
    'qwen3-4b',
    [
      { role: 'system', content: 'Verify empirically by re-execution; never trust the trace. Write /tmp/verdict.json.' },
      {
        role: 'user',
        content: `Task: ${t.data.question}\n\nThe solver's trace is in /tmp/trace.json.\n\nVerdict:\n- solved: did the solver give the correct sum? (answer one of, worst to best: no, yes)\n- explained: is the answer grounded in code it ran? (no, partly, yes)`,
      },
    ],
    solver.endedAt ?? start,
  );
  j.reply({ content: "Re-running the solver's script.", toolCalls: [toolCall('call_1', 'bash', { command: 'python3 sum.py' })] });
  j.add({ role: 'tool', toolCallId: 'call_1', content: `${solved ? expected : expected + n + 1}\n` });
  j.reply({
    content: null,
    reasoning: solved ? 'The output matches the closed form.' : `The loop runs to ${n + 1}, one past the end: off by one.`,
    toolCalls: [toolCall('call_2', 'bash', { command: 'cat > /tmp/verdict.json <<EOF ... EOF' })],
  });
  j.add({ role: 'tool', toolCallId: 'call_2', content: '' });
  j.reply({ content: 'Verdict written.' });
  j.end('agent_completed');
  judge.info = {
    verdict: {
      verdicts: [
        {
          name: 'solved',
          reason: solved
            ? `Re-ran sum.py: it prints ${expected}, which equals ${n}·${n + 1}/2.`
            : `sum.py loops to ${n + 1} (off by one); the true sum is ${expected}, not ${claimed}.`,
          verdict: solved ? 'yes' : 'no',
        },
        {
          name: 'explained',
          reason: solved ? 'The answer quotes the script output.' : 'The answer quotes output of a buggy script.',
          verdict: solved ? 'yes' : 'partly',
        },
      ],
    },
  };
  // As agentic-judge records it: the judged trace carries a copy naming the judge's trace.
  solver.info = { ...solver.info, verdict: { judgeTrace: judge.id, ...(judge.info.verdict as object) } };
  episode.traces.push(solver, judge);
  episode.endedAt = judge.endedAt;
  return episode;
}

/** A proposer invents a problem, then four solvers attempt it. */
export function proposerEpisode(options: { index: number; start: number; id?: string }): Episode {
  const { index, start } = options;
  const rng = random(1000 + index);
  const a = 3 + Math.floor(rng() * 20);
  const b = 5 + Math.floor(rng() * 30);
  const answer = a * b + 7;
  const t = task(`topic-${index}`, { topic: ['number theory', 'combinatorics', 'rates and mixtures'][index % 3], seed: index });
  const episode = new Episode({
    id: options.id ?? `propose-${index}`,
    env: { id: 'proposer-solver' },
    task: t,
    group: { id: `g-propose-${index}`, index: 0 },
  });
  episode.startedAt = start;
  const problem = `A crate holds ${a} rows of ${b} bottles, plus 7 loose bottles. How many bottles are there?`;
  const proposer = new Trace({
    id: `${episode.id}-proposer`,
    task: t,
    agent: { name: 'proposer', trainable: true, model: 'qwen3-4b', harness: 'null' },
  });
  new Conversation(
    proposer,
    'qwen3-4b',
    [
      {
        role: 'system',
        content:
          'Invent one hard word problem with a single integer answer. End with a JSON line {"problem": "...", "answer": <int>}.',
      },
      { role: 'user', content: `Topic: ${t.data.topic}` },
    ],
    start,
  )
    .reply({
      content: `Here is a problem.\n{"problem": "${problem}", "answer": ${answer}}`,
      reasoning: `${a}*${b}+7 = ${answer}.`,
    })
    .end('agent_completed');
  const scores: number[] = [];
  const solvers: Trace[] = [];
  for (let k = 0; k < 4; k++) {
    const right = rng() < 0.55;
    const given = right ? answer : answer - b;
    const solver = new Trace({
      id: `${episode.id}-solver-${k}`,
      task: t,
      agent: { name: 'solver', trainable: true, model: 'qwen3-4b', harness: 'null' },
    });
    new Conversation(
      solver,
      'qwen3-4b',
      [{ role: 'user', content: `${problem}\nEnd your reply with just the final integer.` }],
      start + 2000,
    )
      .reply({
        content: `${a} × ${b} = ${a * b}${right ? ', plus 7' : ''}.\n${given}`,
        reasoning: right ? undefined : 'Forgot the loose bottles.',
      })
      .end('agent_completed');
    solver.recordReward('correct', right ? 1 : 0);
    scores.push(right ? 1 : 0);
    solvers.push(solver);
  }
  const p = scores.reduce((x, y) => x + y, 0) / scores.length;
  proposer.recordMetric('solve_rate', p);
  proposer.recordReward('learnability', 4 * p * (1 - p));
  proposer.info = { parsed: { problem, answer } };
  episode.traces.push(proposer, ...solvers);
  episode.endedAt = start + 5000;
  return episode;
}

/** Two seats of Kuhn poker, one hand. */
export function kuhnEpisode(options: { index: number; start: number; id?: string }): Episode {
  const { index, start } = options;
  const cards = ['J', 'Q', 'K'];
  const rng = random(7 + index);
  const c0 = cards[Math.floor(rng() * 3)]!;
  const c1 = cards.filter((c) => c !== c0)[Math.floor(rng() * 2)]!;
  const rank = (c: string) => cards.indexOf(c);
  const t = task(`kuhn-${index}`, { idx: index, seed: index });
  const episode = new Episode({
    id: options.id ?? `kuhn-${index}`,
    env: { id: 'kuhn-poker' },
    task: t,
    group: { id: `g-kuhn-${index}`, index: 0 },
  });
  episode.startedAt = start;
  const rules = (seat: number, card: string) =>
    `You are Player ${seat} in Kuhn poker (cards J < Q < K, ante 1). Your card: ${card}. Reply with exactly one bracketed action.`;
  const p0 = new Trace({
    id: `${episode.id}-p0`,
    task: t,
    agent: { name: 'player0', trainable: true, model: 'qwen3-0.6b', harness: 'null' },
  });
  const p1 = new Trace({
    id: `${episode.id}-p1`,
    task: t,
    agent: { name: 'player1', trainable: true, model: 'qwen3-0.6b', harness: 'null' },
  });
  const bet = rank(c0) === 2 || rng() < 0.3;
  const call = rank(c1) >= 1;
  const history = bet ? (call ? 'bet-call' : 'bet-fold') : 'check-check';
  const stake = history === 'bet-call' ? 2 : 1;
  const net = history === 'bet-fold' ? 1 : rank(c0) > rank(c1) ? stake : -stake;
  new Conversation(
    p0,
    'qwen3-0.6b',
    [
      { role: 'system', content: rules(0, c0) },
      { role: 'user', content: 'Betting so far: (none). You are Player 0. Your legal actions: [check] or [bet].' },
    ],
    start,
  )
    .reply({ content: bet ? `With ${c0} I bet. [bet]` : `I check. [check]`, reasoning: `I hold ${c0}.` })
    .end('agent_completed');
  new Conversation(
    p1,
    'qwen3-0.6b',
    [
      { role: 'system', content: rules(1, c1) },
      {
        role: 'user',
        content: `Betting so far: ${bet ? 'bet' : 'check'}. You are Player 1. Your legal actions: ${bet ? '[fold] or [call]' : '[check] or [bet]'}.`,
      },
    ],
    start + 800,
  )
    .reply({ content: bet ? (call ? '[call]' : 'Too risky. [fold]') : '[check]' })
    .end('agent_completed');
  p0.recordReward('payoff', net);
  p1.recordReward('payoff', -net);
  p0.recordMetric('forfeit', 0);
  p1.recordMetric('forfeit', 0);
  p0.info = { kuhn: { seat: 0, card: c0, history, seed: index, forfeited: false } };
  p1.info = { kuhn: { seat: 1, card: c1, history, seed: index, forfeited: false } };
  episode.traces.push(p0, p1);
  episode.endedAt = start + 2000;
  return episode;
}

/** Episodes that failed in different ways: a provider error, a timeout, a parse error, a sandbox error. */
export function errorEpisodes(start: number): Episode[] {
  const out: Episode[] = [];
  {
    const t = task('sum-to-90', { question: 'What is the sum of the integers from 1 to 90?' });
    const episode = new Episode({
      id: 'error-provider',
      env: { id: 'agentic-judge' },
      task: t,
      group: { id: 'g-err-0', index: 0 },
    });
    const solver = new Trace({
      id: 'error-provider-solver',
      task: t,
      agent: { name: 'solver', trainable: true, model: 'qwen3-4b', harness: 'bash' },
    });
    const error = Object.assign(named('ProviderError', '502 Bad Gateway from http://127.0.0.1:8000/v1/chat/completions'), {
      statusCode: 502,
    });
    new Conversation(
      solver,
      'qwen3-4b',
      [
        { role: 'system', content: SOLVER_SYSTEM },
        { role: 'user', content: String(t.data.question) },
      ],
      start,
    ).fail(error);
    solver.recordError(error, 'model');
    solver.endedAt = start + 30_000;
    episode.traces.push(solver);
    episode.startedAt = start;
    episode.endedAt = start + 30_000;
    out.push(episode);
  }
  {
    const t = task('sum-to-91', { question: 'What is the sum of the integers from 1 to 91?' });
    const episode = new Episode({
      id: 'error-timeout',
      env: { id: 'agentic-judge' },
      task: t,
      group: { id: 'g-err-1', index: 0 },
    });
    const solver = new Trace({
      id: 'error-timeout-solver',
      task: t,
      agent: { name: 'solver', trainable: true, model: 'qwen3-4b', harness: 'bash' },
    });
    const c = new Conversation(
      solver,
      'qwen3-4b',
      [
        { role: 'system', content: SOLVER_SYSTEM },
        { role: 'user', content: String(t.data.question) },
      ],
      start,
    );
    c.reply({ content: null, toolCalls: [toolCall('call_1', 'bash', { command: 'sleep 600' })] });
    c.add({ role: 'tool', toolCallId: 'call_1', content: 'command timed out after 120 s', isError: true });
    solver.recordError(named('TimeoutError', 'agent stage exceeded 300000 ms'), 'agent');
    solver.endedAt = start + 300_000;
    episode.traces.push(solver);
    episode.startedAt = start;
    episode.endedAt = start + 300_000;
    out.push(episode);
  }
  {
    const t = task('topic-parse', { topic: 'geometry', seed: 99 });
    const episode = new Episode({
      id: 'error-parse',
      env: { id: 'proposer-solver' },
      task: t,
      group: { id: 'g-err-2', index: 0 },
    });
    const proposer = new Trace({
      id: 'error-parse-proposer',
      task: t,
      agent: { name: 'proposer', trainable: true, model: 'qwen3-4b', harness: 'null' },
    });
    new Conversation(proposer, 'qwen3-4b', [{ role: 'user', content: 'Topic: geometry' }], start)
      .reply({ content: 'A triangle has sides 3, 4 and 5. What is its area? The answer is 6.' })
      .end('agent_completed');
    episode.traces.push(proposer);
    episode.recordError(named('ParseError', 'proposer reply has no JSON line with "problem" and an integer "answer"'), 'env');
    episode.startedAt = start;
    episode.endedAt = start + 1500;
    out.push(episode);
  }
  {
    const t = task('kuhn-sandbox', { idx: 500, seed: 500 });
    const episode = new Episode({ id: 'error-sandbox', env: { id: 'kuhn-poker' }, task: t, group: { id: 'g-err-3', index: 0 } });
    const p0 = new Trace({
      id: 'error-sandbox-p0',
      task: t,
      agent: { name: 'player0', trainable: true, model: 'qwen3-0.6b', harness: 'null' },
    });
    p0.recordError(named('SandboxError', 'container exited with code 137 before setup (out of memory)'), 'boot');
    p0.startedAt = start;
    p0.endedAt = start + 800;
    episode.traces.push(p0);
    episode.startedAt = start;
    episode.endedAt = start + 800;
    out.push(episode);
  }
  return out;
}

/** The mixed run used by the browser tests and the screenshot: judge, proposer + 4 solvers, poker, errors. */
export function fixtureEpisodes(): Episode[] {
  const episodes: Episode[] = [];
  let clock = BASE_TIME;
  for (let index = 0; index < 3; index++) {
    for (let rollout = 0; rollout < 4; rollout++) {
      episodes.push(judgeEpisode({ index, rollout, solved: (index + rollout) % 3 !== 1, start: clock }));
      clock += 9000;
    }
  }
  for (let index = 0; index < 3; index++) {
    episodes.push(proposerEpisode({ index, start: clock }));
    clock += 6000;
  }
  for (let index = 0; index < 6; index++) {
    episodes.push(kuhnEpisode({ index, start: clock }));
    clock += 2500;
  }
  episodes.push(...errorEpisodes(clock));
  return episodes;
}

/** One solver trace with `messages` messages (system, user, then assistant / tool pairs). */
export function longEpisode(options: { messages: number; start?: number }): Episode {
  const start = options.start ?? BASE_TIME;
  const t = task('long-horizon', { question: 'Fix the failing tests in the repository.' });
  const episode = new Episode({ id: 'long-trace', env: { id: 'single-agent' }, task: t, group: { id: 'g-long', index: 0 } });
  const trace = new Trace({
    id: 'long-trace-agent',
    task: t,
    agent: { name: 'solver', trainable: true, model: 'qwen3-4b', harness: 'bash' },
  });
  // Recorded incrementally (as a harness does), with a ModelCall per sampled node.
  let parent = trace.addPrompt([
    { role: 'system', content: SOLVER_SYSTEM },
    { role: 'user', content: String(t.data.question) },
  ]);
  let clock = start;
  let turn = 0;
  while (trace.nodes.length + 2 <= options.messages) {
    const id = `call_${turn}`;
    const reply: AssistantMessage = {
      role: 'assistant',
      content: turn % 5 === 0 ? `Step ${turn}: the test output shows ${turn % 7} failures; I will look at the next file.` : null,
      toolCalls: [toolCall(id, 'bash', { command: `pytest tests/test_${turn % 37}.py -x -q` })],
      ...(turn % 3 === 0 ? { reasoning: `Turn ${turn}. `.repeat(12) } : {}),
    };
    const node = trace.addMessage(reply, parent, true);
    trace.calls.push({
      node,
      promptNode: parent,
      model: 'qwen3-4b',
      dialect: 'openai-chat',
      sampling: { temperature: 1 },
      finishReason: 'tool_calls',
      usage: { promptTokens: 300 + turn * 60, completionTokens: 40 + (turn % 11) * 9 },
      startedAt: clock,
      durationMs: 300 + (turn % 13) * 40,
    });
    clock += 900;
    const lines = Array.from(
      { length: 1 + (turn % 6) },
      (_, i) => `tests/test_${turn % 37}.py::test_case_${i} ${i % 3 === 0 ? 'FAILED' : 'PASSED'}`,
    );
    parent = trace.addMessage({ role: 'tool', toolCallId: id, content: lines.join('\n') }, node);
    turn++;
  }
  trace.startedAt = start;
  trace.stop('max_turns');
  trace.endedAt = clock;
  trace.recordReward('tests_passed', 0.25);
  episode.traces.push(trace);
  episode.startedAt = start;
  episode.endedAt = clock;
  return episode;
}

/** Serializes episodes as `traces.jsonl` lines. */
export function toJsonl(episodes: Episode[]): string {
  return episodes.map((e) => `${JSON.stringify(e.toJSON())}\n`).join('');
}

/** Writes a run directory: traces.jsonl (optionally with a torn last line), config.json, summary.json, logs/. */
export async function writeFixtureRun(options: {
  dir: string;
  /** The episodes to write, or `jsonl`: ready traces.jsonl text. */
  episodes?: Episode[];
  jsonl?: string;
  tornTail?: boolean;
  config?: Record<string, unknown>;
}): Promise<string> {
  const { dir } = options;
  await mkdir(join(dir, 'logs'), { recursive: true });
  let jsonl = options.jsonl ?? toJsonl(options.episodes ?? []);
  const episodeCount = jsonl.split('\n').filter(Boolean).length;
  if (options.tornTail) jsonl += '{"version":1,"id":"torn-episode","env":{"id":"agentic-judge"},"task":{"key":"sum-to';
  await writeFile(join(dir, 'traces.jsonl'), jsonl);
  const config = options.config ?? {
    env: { id: 'mixed-fixture' },
    model: 'qwen3-4b',
    sampling: { temperature: 1, maxTokens: 4096 },
    numTasks: 3,
    numRollouts: 4,
    maxConcurrent: 32,
    agents: { solver: { harness: 'bash', runtime: 'docker' }, judge: { harness: 'bash', trainable: false } },
  };
  await writeFile(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  await writeFile(join(dir, 'summary.json'), `${JSON.stringify({ episodes: episodeCount }, null, 2)}\n`);
  await writeFile(join(dir, 'logs', 'eval.log'), 'fixture run\n');
  return dir;
}

/**
 * traces.jsonl text for a large run: `count` episodes (judge, proposer + 4 solvers, poker in
 * rotation), built as `prototypes` distinct episodes with the real classes, then repeated under
 * fresh ids (ids `episode-00000`, `episode-00001`, ...). Optionally `extra` episodes are appended.
 */
export function largeRunJsonl(options: { count: number; prototypes?: number; extra?: Episode[] }): string {
  const placeholder = '__EPISODE_ID__';
  const protos: string[] = [];
  const n = Math.min(options.count, options.prototypes ?? 60);
  let clock = BASE_TIME;
  for (let i = 0; i < n; i++) {
    const kind = i % 10;
    let episode: Episode;
    if (kind < 5)
      episode = judgeEpisode({ index: i % 50, rollout: Math.floor(i / 10), solved: i % 3 !== 0, start: clock, id: placeholder });
    else if (kind < 7) episode = proposerEpisode({ index: i, start: clock, id: placeholder });
    else episode = kuhnEpisode({ index: i, start: clock, id: placeholder });
    protos.push(JSON.stringify(episode.toJSON()));
    clock += 1000;
  }
  const lines: string[] = [];
  for (let i = 0; i < options.count; i++)
    lines.push(protos[i % n]!.split(placeholder).join(`episode-${String(i).padStart(5, '0')}`));
  for (const episode of options.extra ?? []) lines.push(JSON.stringify(episode.toJSON()));
  return `${lines.join('\n')}\n`;
}
