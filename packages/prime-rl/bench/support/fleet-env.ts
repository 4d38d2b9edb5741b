/**
 * The multi-turn env of `pnpm bench:fleet`: one trainable `assistant` seat (the in-process `null`
 * harness, so every call goes through its rollout session's interception and recording) holds a
 * conversation of `info.turns` user turns, each a short instruction. Its reward is 1 when its
 * replies came to more than `info.threshold` completion tokens in all, else 0, so the episodes of a
 * group differ and GRPO gives them advantages.
 */
import { defineEnv, Task, Taskset } from '@troupe/verifiers';

/** System prompt of every task. */
export const FLEET_SYSTEM_PROMPT = 'You are a careful writer. Continue the story the user starts, one part per turn.';

/** The user's message at turn `turn` of task `index`. */
export function fleetUserMessage(index: number, turn: number): string {
  return turn === 0
    ? `Story ${index}: a lighthouse keeper finds a letter that was never sent. Write the first part.`
    : `Part ${turn + 1}: continue from where you stopped, and keep the same voice.`;
}

/** Turns of task `index`: 2, 3 or 4. */
export function fleetTurns(index: number): number {
  return 2 + (index % 3);
}

/** The bench's taskset: task i has `fleetTurns(i)` turns and a reward threshold of `medianTokens` per turn. */
export function fleetTaskset(options: { medianTokens: number }): Taskset {
  return Taskset.generate('fleet-turns', (index) => {
    const turns = fleetTurns(index);
    return new Task(
      { idx: index, prompt: null, systemPrompt: FLEET_SYSTEM_PROMPT, info: { turns, threshold: turns * options.medianTokens } },
      { key: `fleet-${index}`, type: 'fleet-turns' },
    );
  });
}

/** The env: see the module header. */
export const fleetTurnsEnv = defineEnv({
  id: 'fleet-turns',
  description: 'A multi-turn conversation with one trainable seat; reward for long replies.',
  roles: { assistant: { harness: 'null', trainable: true } },
  async run({ task, agents }) {
    const info = task.data.info as { turns: number };
    const seat = await agents.assistant.interaction(task);
    try {
      for (let turn = 0; turn < info.turns; turn++) {
        const segment = await seat.turn(fleetUserMessage(Number(task.data.idx), turn));
        if (segment.terminated) break;
      }
    } finally {
      await seat.close();
    }
  },
  finalize({ task, episode }) {
    const threshold = (task.data.info as { threshold: number }).threshold;
    for (const trace of episode.traces) trace.recordReward('long_replies', trace.usage.completionTokens > threshold ? 1 : 0);
  },
});
