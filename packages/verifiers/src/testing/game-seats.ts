// Game seats played by a scripted model: the prompt of a turn-based env lists its legal actions as
// `[action]`, and the reply names one of them the same way.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScriptedModelServer } from './scripted-model-server.ts';

/**
 * A scripted model server for game seats: it replies `[action]` with the first legal action the
 * last message lists as `[action]`, or the last one when the request's model is one of
 * `playsLast` (e.g. a passive and an aggressive player), and `[fallback]` (default `check`) when
 * the message lists none.
 */
export function legalActionServer(options: { playsLast: readonly string[]; fallback?: string }): Promise<ScriptedModelServer> {
  return ScriptedModelServer.start({
    script: (request) => {
      const actions = [...String(request.messages.at(-1)?.content).matchAll(/\[(\w+)\]/g)].map((m) => m[1]);
      const action = options.playsLast.includes(request.model) ? actions.at(-1) : actions[0];
      return `[${action ?? options.fallback ?? 'check'}]`;
    },
  });
}

/** The episodes of a run directory (`<dir>/traces.jsonl`), parsed, in file order. */
export function runEpisodes(dir: string): ReturnType<typeof JSON.parse>[] {
  return readFileSync(join(dir, 'traces.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}
