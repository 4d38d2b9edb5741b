import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { traceReward } from '@troupe/prime-rl';
import {
  checkpointEvaluationPolicy,
  type EvaluationPolicy,
  hashSeed,
  loadEmbeddedCheckpoint,
  ModelRouter,
  splitCheckpointPolicy,
} from '@troupe/prime-rl/orchestrator';
import { ConfigError, Env, type Episode, type ModelClient } from '@troupe/verifiers';
import { summarize } from './evaluate.ts';
import { registerGameRuntime } from './game-runtime.ts';
import { resolveEnv } from './resolve-env.ts';
import type { RunConfig, SourceConfig } from './run-config.ts';

/** Options of {@link crossplay}. */
export interface CrossplayOptions {
  /** Checkpoint directories, each `path` or `label=path`. */
  checkpoints: readonly string[];
  /**
   * Fixed opponents by name, from those the env declares (its module's `opponents`). Default: with
   * one checkpoint, every opponent the env declares; with several, none.
   */
  opponents?: readonly string[];
  /** Hands (episodes) per pair and seat order. */
  hands: number;
  seed?: number;
  log?: (line: string) => void;
}

/** Mean with the half-width of its 95% confidence interval (1.96·sd/√n). */
export interface Estimate {
  mean: number;
  ci95: number;
}

/** One player of the cross-play: a checkpoint or a fixed opponent. */
export interface CrossplayPlayer {
  label: string;
  kind: 'checkpoint' | 'opponent';
  /** Checkpoint directory, or the opponent's name. */
  source: string;
  /** Trainer step of a checkpoint. */
  step?: number;
  /** Elo rating (Bradley–Terry fit on episode scores that grow with the reward margin; the players' mean is 1500). */
  elo: number;
  /** The env's own evaluator on this player's policy (e.g. an exact `nash_conv` and `game_value`). */
  evaluation: Record<string, number>;
}

/** What {@link crossplay} returns (and the CLI prints as its last stdout line). */
export interface CrossplayResult {
  env: string;
  roles: [string, string];
  hands: number;
  seed: number;
  players: CrossplayPlayer[];
  /**
   * `payoff[i][j]`: player i's mean reward per episode against player j, both seat orders on the
   * same tasks, with a 95% CI over the paired tasks; null on the diagonal.
   */
  payoff: (Estimate | null)[][];
  /** `winRate[i][j]`: share of i's episodes against j with a higher reward than j's (ties count half). */
  winRate: (number | null)[][];
  elo: { method: string };
}

interface Player {
  label: string;
  kind: 'checkpoint' | 'opponent';
  source: string;
  step?: number;
  client: ModelClient;
  policy?: EvaluationPolicy & { loadRngState?(state: unknown): void };
}

/** Keys of a role binding that are not agent config. */
const AGENT_BINDING_KEYS = new Set(['policy', 'model', 'checkpoint', 'pool', 'trainable']);

/**
 * Bradley–Terry strengths by Hunter's (2004) MM iteration, p_i ← W_i / Σ_j n_ij / (p_i + p_j),
 * from `wins[i][j]` (i's score against j: wins, or fractional scores) with half a pseudo-win each way per pair
 * (so a player that wins every hand still has a finite rating), as Elo: 400·log10(p_i),
 * shifted so the mean is 1500.
 */
export function bradleyTerryElo(wins: readonly (readonly number[])[]): number[] {
  const n = wins.length;
  const w = wins.map((row, i) => row.map((x, j) => (i === j ? 0 : x + 0.5)));
  let p = Array.from({ length: n }, () => 1);
  for (let iteration = 0; iteration < 10_000; iteration++) {
    const next = p.map((pi, i) => {
      let won = 0;
      let denominator = 0;
      for (let j = 0; j < n; j++) {
        if (i === j) continue;
        won += w[i]?.[j] ?? 0;
        denominator += ((w[i]?.[j] ?? 0) + (w[j]?.[i] ?? 0)) / (pi + (p[j] as number));
      }
      return denominator > 0 ? won / denominator : pi;
    });
    const logMean = next.reduce((a, b) => a + Math.log(b), 0) / n;
    const normalised = next.map((x) => x / Math.exp(logMean));
    const change = Math.max(...normalised.map((x, i) => Math.abs(Math.log(x) - Math.log(p[i] as number))));
    p = normalised;
    if (change < 1e-12) break;
  }
  return p.map((x) => 1500 + 400 * Math.log10(x));
}

/** `[label=]<dir>[#<policy>]`: the player's label (default the run's folder name, then `#<policy>`), directory and policy. */
function parseCheckpointArgument(argument: string): { label: string; dir: string; policy?: string } {
  const eq = argument.indexOf('=');
  if (eq > 0 && /^[\w.+-]+$/.test(argument.slice(0, eq)) && !existsSync(argument)) {
    return { label: argument.slice(0, eq), ...splitCheckpointPolicy(argument.slice(eq + 1)) };
  }
  const { dir, policy } = splitCheckpointPolicy(argument);
  const name = basename(dir);
  const label = name === 'checkpoint' ? basename(dirname(dir)) || dir : name;
  return { label: policy ? `${label}#${policy}` : label, dir, ...(policy ? { policy } : {}) };
}

/**
 * Cross-play: every pair of players (checkpoints and fixed opponents) plays `hands` episodes of
 * the checkpoints' env in each seat order, on the same tasks (the env's own taskset from task
 * 1,000,000, as `eval` uses). Reports the payoff matrix with 95% CIs (paired over tasks), win
 * rates, Elo ratings from a Bradley–Terry fit on the episodes won, and the env's own evaluator
 * on each player. The env is the checkpoints' first train source (all must train the same env
 * with the same options); it must have two roles. Fixed opponents are the ones the env declares.
 */
export async function crossplay(options: CrossplayOptions): Promise<CrossplayResult> {
  registerGameRuntime();
  const log = options.log ?? (() => {});
  const seed = options.seed ?? 1;
  if (!Number.isInteger(options.hands) || options.hands < 1)
    throw new ConfigError(`--hands: expected a positive integer, got ${options.hands}`);
  if (!Number.isInteger(seed)) throw new ConfigError(`--seed: expected an integer, got ${options.seed}`);
  if (options.checkpoints.length === 0) throw new ConfigError('--checkpoint: give at least one checkpoint directory');

  const players: Player[] = [];
  let source: SourceConfig | null = null;
  let run: RunConfig | null = null;
  for (const argument of options.checkpoints) {
    const { label, dir, policy: policyName } = parseCheckpointArgument(argument);
    const loaded = existsSync(join(dir, 'meta.json')) ? await loadEmbeddedCheckpoint(dir) : null;
    if (!loaded) throw new ConfigError(`--checkpoint ${argument}: no checkpoint in ${dir} (expected ${join(dir, 'meta.json')})`);
    const config = (loaded.run as { config?: RunConfig }).config;
    const first = config?.train.source[0];
    if (!config || !first) throw new ConfigError(`--checkpoint ${argument}: the checkpoint holds no run config`);
    if (source && (first.env !== source.env || JSON.stringify(first.options) !== JSON.stringify(source.options))) {
      throw new ConfigError(
        `--checkpoint ${argument}: trains ${first.env} ${JSON.stringify(first.options)}, the first checkpoint ${source.env} ${JSON.stringify(source.options)}; cross-play needs one env`,
      );
    }
    source ??= first;
    run ??= config;
    if (players.some((p) => p.label === label))
      throw new ConfigError(`--checkpoint ${argument}: two players are labelled ${label}; name them label=path`);
    let policy: Awaited<ReturnType<typeof checkpointEvaluationPolicy>>;
    try {
      policy = await checkpointEvaluationPolicy({
        dir,
        maxTokens: config.policy.maxTokens,
        seed,
        ...(policyName ? { policy: policyName } : {}),
      });
    } catch (error) {
      throw new ConfigError(`--checkpoint ${argument}: ${(error as Error).message.replace(/^checkpoint: /, '')}`);
    }
    players.push({ label, kind: 'checkpoint', source: dir, step: loaded.checkpoint.step, client: policy.client, policy });
  }
  if (!source || !run) throw new ConfigError('--checkpoint: give at least one checkpoint directory');

  const {
    definition,
    training,
    opponents: declared = {},
  } = await resolveEnv(source.env, {
    baseDir: process.cwd(),
    field: 'env',
  });
  const opponents = options.opponents ?? (options.checkpoints.length === 1 ? Object.keys(declared) : []);
  for (const [k, name] of opponents.entries()) {
    const opponent = Object.hasOwn(declared, name) ? declared[name] : undefined;
    if (!opponent) {
      const known = Object.keys(declared);
      throw new ConfigError(
        `--opponent ${name}: unknown opponent; env ${source.env} declares ${known.length ? known.join(', ') : 'no fixed opponents'}`,
      );
    }
    const policy = { version: 0, ...opponent.create({ seed: seed + k, options: source.options }) };
    players.push({ label: name, kind: 'opponent', source: name, client: policy.client, policy });
  }
  if (players.length < 2) throw new ConfigError('crossplay needs at least two players (--checkpoint and --opponent together)');
  const roles = Object.keys(definition.roles);
  if (roles.length !== 2)
    throw new ConfigError(`env ${definition.id} has ${roles.length} roles (${roles.join(', ')}); cross-play needs two seats`);
  const [role0, role1] = roles as [string, string];
  const agentConfig = (role: string) =>
    Object.fromEntries(Object.entries(source?.roles[role] ?? {}).filter(([key]) => !AGENT_BINDING_KEYS.has(key)));

  const makeEnv = (seat0: ModelClient, seat1: ModelClient) =>
    Env.create({
      definition,
      config: {
        id: definition.id,
        ...source?.options,
        [role0]: { harness: 'null', runtime: 'game', ...agentConfig(role0), model: 'seat0', trainable: false },
        [role1]: { harness: 'null', runtime: 'game', ...agentConfig(role1), model: 'seat1', trainable: false },
      },
      run: {
        model: 'seat0',
        client: new ModelRouter({
          main: () => seat0,
          frozen: new Map([
            ['seat0', seat0],
            ['seat1', seat1],
          ]),
        }),
        sampling: { temperature: run?.policy.temperature ?? 1, maxTokens: run?.policy.maxTokens ?? 1 },
      },
    });
  const probe = await makeEnv(players[0]?.client as ModelClient, players[0]?.client as ModelClient);
  const taskset = await definition.taskset?.(probe.options);
  if (!taskset) throw new ConfigError(`env ${definition.id} has no taskset of its own to play cross-play on`);

  const n = players.length;
  const payoff: (Estimate | null)[][] = players.map(() => players.map(() => null));
  const winRate: (number | null)[][] = players.map(() => players.map(() => null));
  const wins: number[][] = players.map(() => players.map(() => 0));
  // Reward differences (row − column) of every episode of each pair, for the Elo scores.
  const margins: { i: number; j: number; differences: number[] }[] = [];
  const reward = (episode: Episode, role: string) => {
    const trace = episode.byAgent[role]?.[0];
    return trace ? traceReward(trace) : 0;
  };
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const a = players[i] as Player;
      const b = players[j] as Player;
      // Per task h: a's and b's rewards averaged over the two seat orders.
      const paired: [number[], number[]] = [new Array(options.hands).fill(0), new Array(options.hands).fill(0)];
      const differences: number[] = [];
      margins.push({ i, j, differences });
      for (const order of [0, 1] as const) {
        const [first, second] = order === 0 ? [a, b] : [b, a];
        first.policy?.loadRngState?.(hashSeed([seed, i, j, order, 0]));
        second.policy?.loadRngState?.(hashSeed([seed, i, j, order, 1]));
        const env = await makeEnv(first.client, second.client);
        const episodes = await Promise.all(
          Array.from({ length: options.hands }, (_, h) =>
            env.runEpisode({ task: taskset.at(1_000_000 + h), group: { id: `crossplay-${i}-${j}-${order}-${h}`, index: 0 } }),
          ),
        );
        const rowA = wins[i] as number[];
        const rowB = wins[j] as number[];
        episodes.forEach((episode, h) => {
          differences.push(0);
          const [ra, rb] =
            order === 0 ? [reward(episode, role0), reward(episode, role1)] : [reward(episode, role1), reward(episode, role0)];
          paired[0][h] = (paired[0][h] ?? 0) + ra / 2;
          paired[1][h] = (paired[1][h] ?? 0) + rb / 2;
          differences[differences.length - 1] = ra - rb;
          const score = ra > rb ? 1 : ra === rb ? 0.5 : 0;
          rowA[j] = (rowA[j] ?? 0) + score;
          rowB[i] = (rowB[i] ?? 0) + 1 - score;
        });
      }
      const estimate = summarize(paired[0]);
      (payoff[i] as (Estimate | null)[])[j] = estimate;
      (payoff[j] as (Estimate | null)[])[i] = summarize(paired[1]);
      (winRate[i] as (number | null)[])[j] = (wins[i]?.[j] ?? 0) / (2 * options.hands);
      (winRate[j] as (number | null)[])[i] = (wins[j]?.[i] ?? 0) / (2 * options.hands);
      log(
        `${a.label} vs ${b.label}: ${estimate.mean.toFixed(3)} ± ${estimate.ci95.toFixed(3)} per episode (${2 * options.hands} episodes)`,
      );
    }
  }
  // Elo scores: episode score 1/2 + (r_row − r_col) / (2·D), D the largest |r_row − r_col| seen, so a
  // bigger win counts more (with D = 4: a margin of 4 scores 1, of 2 scores 0.75, a tie 0.5).
  const spread = Math.max(1e-12, ...margins.flatMap((m) => m.differences.map(Math.abs)));
  const scores: number[][] = players.map(() => players.map(() => 0));
  for (const { i, j, differences } of margins) {
    for (const d of differences) {
      const score = 0.5 + d / (2 * spread);
      (scores[i] as number[])[j] = (scores[i]?.[j] ?? 0) + score;
      (scores[j] as number[])[i] = (scores[j]?.[i] ?? 0) + 1 - score;
    }
  }
  const elo = bradleyTerryElo(scores);
  const evaluator = training?.evaluator?.(probe.options);
  const result: CrossplayPlayer[] = [];
  for (const [k, player] of players.entries()) {
    let evaluation: Record<string, number> = {};
    if (evaluator && player.policy?.replyProbabilities) {
      evaluation = (await evaluator.evaluate({ policy: player.policy, step: player.step ?? 0 })).metrics;
      // The evaluator's running average is for training; a single policy's average is itself.
      delete evaluation.nash_conv_average;
    }
    result.push({
      label: player.label,
      kind: player.kind,
      source: player.source,
      ...(player.step !== undefined ? { step: player.step } : {}),
      elo: elo[k] as number,
      evaluation,
    });
  }
  return {
    env: definition.id,
    roles: [role0, role1],
    hands: options.hands,
    seed,
    players: result,
    payoff,
    winRate,
    elo: {
      method:
        'Bradley–Terry on episode scores 1/2 + (r_row − r_column)/(2·D) (D the largest reward margin seen), fit by the MM iteration (Hunter 2004) with half a pseudo-win each way per pair; Elo = 400·log10(strength), mean 1500',
    },
  };
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);

/** The cross-play page: the payoff matrix as a heat map (row player's payoff), Elo and evaluator metrics. Self-contained. */
export function crossplayHtml(result: CrossplayResult): string {
  const values = result.payoff.flat().filter((x): x is Estimate => x !== null);
  const scale = Math.max(1e-9, ...values.map((x) => Math.abs(x.mean)));
  const colour = (x: number) => {
    const t = Math.min(1, Math.abs(x) / scale);
    // Blue for a positive payoff to the row player, red for a negative one.
    const [r, g, b] = x >= 0 ? [255 - 190 * t, 255 - 120 * t, 255] : [255, 255 - 170 * t, 255 - 170 * t];
    return `rgb(${r.toFixed(0)},${g.toFixed(0)},${b.toFixed(0)})`;
  };
  const metricNames = [...new Set(result.players.flatMap((p) => Object.keys(p.evaluation)))];
  const header = result.players.map((p) => `<th>${escapeHtml(p.label)}</th>`).join('');
  const rows = result.players
    .map((p, i) => {
      const cells = result.payoff[i]
        ?.map((cell, j) =>
          cell === null
            ? '<td class="diag">—</td>'
            : `<td style="background:${colour(cell.mean)}" title="win rate ${((result.winRate[i]?.[j] ?? 0) * 100).toFixed(1)}%">${cell.mean.toFixed(3)}<br><small>± ${cell.ci95.toFixed(3)}</small></td>`,
        )
        .join('');
      return `<tr><th>${escapeHtml(p.label)}</th>${cells}</tr>`;
    })
    .join('\n');
  const ratings = [...result.players]
    .sort((a, b) => b.elo - a.elo)
    .map(
      (p) =>
        `<tr><td>${escapeHtml(p.label)}</td><td>${p.kind}${p.step !== undefined ? ` (step ${p.step})` : ''}</td><td>${p.elo.toFixed(0)}</td>${metricNames
          .map((m) => `<td>${p.evaluation[m] === undefined ? '' : (p.evaluation[m] as number).toFixed(4)}</td>`)
          .join('')}</tr>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Cross-play: ${escapeHtml(result.env)}</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 6px 10px; text-align: center; }
td.diag { background: #eee; color: #888; }
small { color: #444; }
</style></head><body>
<h1>Cross-play: ${escapeHtml(result.env)}</h1>
<p>${result.hands} episodes per pair and seat order (${result.roles.join(' / ')}), seed ${result.seed}. Cell (row, column): the row player's mean reward per episode against the column player, both seats on the same tasks, ± the 95% confidence interval (paired over tasks). Blue: the row player wins; red: it loses.</p>
<table id="payoff"><tr><th>row vs column</th>${header}</tr>
${rows}
</table>
<h2>Ratings</h2>
<p>${escapeHtml(result.elo.method)}.</p>
<table id="ratings"><tr><th>player</th><th>kind</th><th>Elo</th>${metricNames.map((m) => `<th>${escapeHtml(m)}</th>`).join('')}</tr>
${ratings}
</table>
</body></html>
`;
}

/** Writes `crossplay.json` and `crossplay.html` into `out`. */
export async function writeCrossplay(options: { out: string; result: CrossplayResult }): Promise<string[]> {
  await mkdir(options.out, { recursive: true });
  const json = join(options.out, 'crossplay.json');
  const html = join(options.out, 'crossplay.html');
  await writeFile(json, `${JSON.stringify(options.result, null, 2)}\n`);
  await writeFile(html, crossplayHtml(options.result));
  return [json, html];
}
