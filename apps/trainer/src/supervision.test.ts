import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Opd, Sft } from '@troupe/prime-rl';
import { WordTokenizer } from '@troupe/prime-rl/policy';
import { type Env, type ModelClient, ProviderError, Task } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { twoExternalPolicies } from './__fixtures__/trainer-doubles.ts';
import { train } from './run.ts';
import { givenReplies, setupAlgorithm } from './supervision.ts';

const tokenizer = WordTokenizer.fromCorpus({ corpus: ['say red green blue'] });
/** The embedded policy client as the given-replies client sees it: a tokenizer and a context length. */
const policy = { model: 'main', tokenizer, config: { contextLength: 8 } } as unknown as ModelClient;
const request = (text: string, maxTokens = 1) => ({
  model: 'main',
  messages: [{ role: 'user' as const, content: text }],
  sampling: { maxTokens },
});

/** A stand-in env whose episode calls the client once with the task's prompt. */
function envCalling(client: () => ModelClient, maxTokens = 1) {
  const env = {
    runEpisode: async ({ task }: { task: Task }) => client().complete(request(String(task.data.prompt), maxTokens)),
  };
  return env as unknown as Env & { runEpisode: (o: { task: Task }) => Promise<unknown> };
}

describe('givenReplies', () => {
  it("answers an episode's requests with its task's field, tokenised by the policy, and nothing outside an episode", async () => {
    const replies = givenReplies({ replies: { field: 'answer' }, main: () => policy, field: 'train.source[0]', baseDir: '.' });
    const env = envCalling(() => replies.client, 3);
    replies.track(env);
    const response = (await env.runEpisode({ task: new Task({ prompt: 'say green', answer: 'green' }) })) as {
      promptTokenIds: number[];
      completionTokenIds: number[];
      completionLogprobs: number[];
      finishReason: string;
    };
    expect(response.promptTokenIds).toEqual(tokenizer.renderChat({ messages: request('say green').messages }));
    // Shorter than max_tokens: the reply ends with <eos>, as a sampled one does.
    expect(response.completionTokenIds).toEqual([tokenizer.id('green'), tokenizer.eosId]);
    expect(response.completionLogprobs).toEqual([0, 0]);
    expect(response.finishReason).toBe('stop');
    await expect(replies.client.complete(request('say green'))).rejects.toThrow(/no given reply for the prompt "say green"/);
  });

  it('fails the call, not the run, for a task without the field or a reply word the vocabulary lacks', async () => {
    const replies = givenReplies({ replies: { field: 'answer' }, main: () => policy, field: 'train.source[0]', baseDir: '.' });
    const env = envCalling(() => replies.client);
    replies.track(env);
    await expect(env.runEpisode({ task: new Task({ prompt: 'say red' }) })).rejects.toThrow(/has no string field 'answer'/);
    await expect(env.runEpisode({ task: new Task({ prompt: 'say red', answer: 'purple' }) })).rejects.toThrow(ProviderError);
  });

  it('reads the replies of an exported traces.jsonl by the user message before them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'given-replies-'));
    const trace = (role: string, prompt: string, reply: string) => ({
      agent: { name: role },
      ok: true,
      nodes: [
        { id: 0, parent: null, sampled: false, message: { role: 'user', content: prompt } },
        { id: 1, parent: 0, sampled: true, message: { role: 'assistant', content: reply } },
      ],
    });
    writeFileSync(
      join(dir, 'traces.jsonl'),
      `${JSON.stringify({ traces: [trace('judge', 'say red', 'blue'), trace('speaker', 'say red', 'red')] })}\n`,
    );
    const replies = givenReplies({
      replies: { traces: 'traces.jsonl', role: 'speaker' },
      main: () => policy,
      field: 'train.source[0]',
      baseDir: dir,
    });
    const response = await replies.client.complete(request('say red'));
    expect(response.completionTokenIds).toEqual([tokenizer.id('red')]);
    expect(() =>
      givenReplies({ replies: { traces: 'missing.jsonl' }, main: () => policy, field: 'train.source[0]', baseDir: dir }),
    ).toThrow(/train\.source\[0\]\.replies\.traces: cannot read/);
  });
});

describe('setupAlgorithm', () => {
  it('refuses sft and opd with the external engine, naming the field, before connecting anything', async () => {
    for (const algorithm of [new Sft(), new Opd({ type: 'opd', teacher: { checkpoint: 'nowhere' } })])
      await expect(
        setupAlgorithm({ algorithm, main: () => policy, field: 'train.source[1]', baseDir: '.', engine: 'external' }),
      ).rejects.toThrow(/^train\.source\[1\]\.algorithm\.type: (sft|opd) needs the embedded policy's tokenizer/);
    // A role on another policy: its own engine field is named.
    await expect(
      setupAlgorithm({
        algorithm: new Sft(),
        main: () => policy,
        field: 'train.source[0]',
        baseDir: '.',
        engine: 'external',
        policy: 'west',
      }),
    ).rejects.toThrow(/with policies\.west\.engine = "external" use an rl algorithm/);
  });

  it('refuses an opd teacher directory that holds no checkpoint', async () => {
    const algorithm = new Opd({ type: 'opd', teacher: { checkpoint: mkdtempSync(join(tmpdir(), 'no-teacher-')) } });
    await expect(
      setupAlgorithm({ algorithm, main: () => policy, field: 'train.source[0]', baseDir: '.', engine: 'embedded' }),
    ).rejects.toThrow(/^train\.source\[0\]\.algorithm\.teacher\.checkpoint: no checkpoint in /);
  });

  it("refuses sft on a role of an external policy in a run of several policies, naming that policy's engine", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sft-external-'));
    const config = twoExternalPolicies({
      dir,
      steps: 1,
      inference: (name) => ({ base_urls: [`http://127.0.0.1:9/${name}/v1`], model: `${name}-model` }),
    }) as { train: { source: Record<string, unknown>[] } };
    Object.assign(config.train.source[0] as object, { algorithm: { type: 'sft', replies: { field: 'prompt' } } });
    await expect(train({ config, out: join(dir, 'run') })).rejects.toThrow(
      /^train\.source\[0\]\.algorithm\.type: sft needs the embedded policy's tokenizer; with policies\.west\.engine = "external"/,
    );
    expect(existsSync(join(dir, 'run'))).toBe(false);
  });
});
