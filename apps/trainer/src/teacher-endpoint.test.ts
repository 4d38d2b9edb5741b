import { createAlgorithm, type Opd } from '@troupe/prime-rl';
import { ConfigError, ProviderError } from '@troupe/verifiers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTeacherDouble, type TeacherDouble } from './__fixtures__/vllm-teacher-double.ts';
import { connectTeacher } from './supervision.ts';
import { alignPromptLogprobs, endpointTeacher, teacherScoreRequest, teacherScoreUrl } from './teacher-endpoint.ts';

// A scripted teacher over 6 tokens: after a prefix ending in t, token (t + 1) % 6 has probability
// 0.75 and the others 0.05 each.
const VOCAB = 6;
function scripted(prefix: readonly number[]): number[] {
  const next = ((prefix.at(-1) as number) + 1) % VOCAB;
  return Array.from({ length: VOCAB }, (_, t) => Math.log(t === next ? 0.75 : 0.05));
}

describe('opd endpoint teacher (vLLM /inference/v1/generate double)', () => {
  let double: TeacherDouble;
  beforeAll(async () => {
    double = await startTeacherDouble({ name: 'teacher-7b', vocabSize: VOCAB, maxModelLen: 8, nextLogprobs: scripted });
  });
  afterAll(() => double.close());
  const client = (overrides: Partial<Parameters<typeof endpointTeacher>[0]> = {}) =>
    endpointTeacher({
      baseUrl: double.baseUrl,
      model: 'teacher-7b',
      apiKey: double.apiKey,
      field: 'train.source[0].algorithm.teacher',
      baseDelayMs: 1,
      ...overrides,
    });

  it("builds prime-rl's scoring request for a branch: the route at the server root, token ids and prompt_logprobs 1", () => {
    expect(teacherScoreUrl('http://h:8000/v1/').href).toBe('http://h:8000/inference/v1/generate');
    expect(teacherScoreUrl('http://h:8000').href).toBe('http://h:8000/inference/v1/generate');
    expect(teacherScoreRequest('m', [3, 1, 4])).toEqual({
      model: 'm',
      token_ids: [3, 1, 4],
      sampling_params: { max_tokens: 1, temperature: 1, top_p: 1, prompt_logprobs: 1 },
    });
  });

  it("aligns one logprob to each of the branch's tokens, 0 for the first, also where the token is not the top-1", async () => {
    // 0 -> 1 is the likely move (0.75); 1 -> 3 is not (0.05), so its entry also lists the top-1 (token 2).
    const scores = await client().score([0, 1, 3]);
    expect(scores[0]).toBe(0);
    expect(scores[1]).toBeCloseTo(Math.log(0.75), 12);
    expect(scores[2]).toBeCloseTo(Math.log(0.05), 12);
    const sent = double.requests.at(-1) as { token_ids: number[]; model: string };
    expect(sent.token_ids).toEqual([0, 1, 3]);
    expect(sent.model).toBe('teacher-7b');
  });

  it('refuses a reply whose prompt_logprobs do not align with the tokens, naming the endpoint and the field', () => {
    const where = 'train.source[0].algorithm.teacher (endpoint http://x/inference/v1/generate, model m)';
    expect(() => alignPromptLogprobs({ prompt_logprobs: [null] }, [1, 2], where)).toThrow(
      /endpoint http:\/\/x\/inference\/v1\/generate.*prompt_logprobs has 1 entries for 2 tokens/,
    );
    expect(() => alignPromptLogprobs({ prompt_logprobs: [null, { 5: { logprob: -1 } }] }, [1, 2], where)).toThrow(
      /prompt_logprobs\[1\] has no logprob for token 2/,
    );
    expect(() => alignPromptLogprobs({ choices: [] }, [1], where)).toThrow(/no prompt_logprobs list/);
  });

  it("surfaces the server's refusals as provider errors naming the endpoint, without retrying a 4xx", async () => {
    const before = double.requests.length;
    const unknown = client({ model: 'nope' }).score([0, 1]);
    await expect(unknown).rejects.toBeInstanceOf(ProviderError);
    await expect(unknown).rejects.toThrow(
      /train\.source\[0\]\.algorithm\.teacher \(endpoint http:\/\/127\.0\.0\.1:\d+\/inference\/v1\/generate.*404.*does not exist/,
    );
    expect(double.requests.length).toBe(before + 1);
    await expect(client().score([0, 1, 2, 3, 4, 5, 0, 1, 2])).rejects.toThrow(/400.*maximum model length of 8/);
    await expect(client().score([0, 9])).rejects.toThrow(/Token id 9 is out of vocabulary/);
    await expect(client({ apiKey: 'wrong' }).score([0, 1])).rejects.toThrow(/answered 401/);
  });

  it('the double refuses prompt_logprobs over --max-logprobs as vLLM does', async () => {
    const response = await fetch(teacherScoreUrl(double.baseUrl), {
      method: 'POST',
      headers: { authorization: `Bearer ${double.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'teacher-7b', token_ids: [1, 2], sampling_params: { max_tokens: 1, prompt_logprobs: 21 } }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
      'Requested prompt logprobs of 21, which is greater than max allowed: 20',
    );
  });

  it('retries a server that is restarting (503) and then scores', async () => {
    double.failNext(2);
    const before = double.requests.length;
    const scores = await client().score([2, 3]);
    expect(scores[1]).toBeCloseTo(Math.log(0.75), 12);
    expect(double.requests.length).toBe(before + 3);
  });

  it('reads the key from the named variable when the run starts, refuses an unset one by name, and checks the server first', async () => {
    const connect = (env: NodeJS.ProcessEnv, model = 'teacher-7b') =>
      connectTeacher({
        reference: { baseUrl: double.baseUrl, model, apiKeyVar: 'TEACHER_KEY' },
        student: () => ({}) as never,
        field: 'train.source[0]',
        baseDir: '.',
        env,
      });
    await expect(connect({})).rejects.toThrow(ConfigError);
    await expect(connect({})).rejects.toThrow(
      /train\.source\[0\]\.algorithm\.teacher\.api_key_var: the environment variable TEACHER_KEY is not set/,
    );
    await expect(connect({ TEACHER_KEY: 'wrong' })).rejects.toThrow(
      /train\.source\[0\]\.algorithm\.teacher \(endpoint .*answered 401/,
    );
    await expect(connect({ TEACHER_KEY: double.apiKey }, 'other')).rejects.toThrow(ConfigError);
    const scorer = await connect({ TEACHER_KEY: double.apiKey });
    expect(await scorer.score([4, 5])).toEqual([0, expect.closeTo(Math.log(0.75), 12)]);
  });

  it('a connection refused is retried, then named with the endpoint', async () => {
    await expect(client({ baseUrl: 'http://127.0.0.1:1/v1', maxRetries: 1 }).score([0, 1])).rejects.toThrow(
      /endpoint http:\/\/127\.0\.0\.1:1\/inference\/v1\/generate.*call failed.*after 2 attempts/,
    );
  });
});

describe('opd endpoint teacher config', () => {
  it('accepts { base_url, model, api_key_var } and refuses a bad field by name', () => {
    const opd = createAlgorithm({
      type: 'opd',
      teacher: { baseUrl: 'http://h:8000/v1', model: 'teacher-7b', apiKeyVar: 'TEACHER_KEY' },
    }) as Opd;
    expect(opd.teacher).toEqual({ baseUrl: 'http://h:8000/v1', model: 'teacher-7b', apiKeyVar: 'TEACHER_KEY' });
    expect(() => createAlgorithm({ type: 'opd', teacher: { baseUrl: 'http://h/v1' } })).toThrow(
      /algorithm\.teacher\.model: required/,
    );
    expect(() => createAlgorithm({ type: 'opd', teacher: { baseUrl: 'ftp://h', model: 'm' } })).toThrow(
      /algorithm\.teacher\.baseUrl/,
    );
    expect(() => createAlgorithm({ type: 'opd', teacher: { checkpoint: 'c', model: 'm' } })).toThrow(
      /algorithm\.teacher\.model: a checkpoint teacher takes no endpoint fields/,
    );
    expect(() => createAlgorithm({ type: 'opd', teacher: { baseUrl: 'http://h', model: 'm', key: 'x' } })).toThrow(/key/);
    expect(() => createAlgorithm({ type: 'opd', teacher: {} })).toThrow(/algorithm\.teacher: a teacher is/);
  });
});
