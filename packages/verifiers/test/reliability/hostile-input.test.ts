import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProposal } from '../../src/env/builtin/proposer-solver/proposal-parser.ts';
import { singleAgentEnv } from '../../src/env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../../src/env/env.ts';
import { TroupeError } from '../../src/errors/troupe-error.ts';
import { parseEvalConfig } from '../../src/eval/eval-config.ts';
import { type InterceptedRollout, startInterceptedRollout } from '../../src/testing/intercepted-rollout.ts';
import { type ScriptedClient, scriptedClient } from '../../src/testing/scripted-model-server.ts';

/** A request that does not answer within this is a hung request: the property fails. */
const REQUEST_TIMEOUT_MS = 10_000;

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

async function send(options: {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: Uint8Array | string;
}): Promise<Answer> {
  const response = await fetch(options.url, {
    method: options.method ?? 'POST',
    headers: options.headers ?? {},
    ...(options.body !== undefined ? { body: options.body } : {}),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', text: await response.text() };
}

/** A 4xx whose body is JSON carrying an `error` object (OpenAI and Anthropic shapes both have one). */
function expectJsonClientError(answer: Answer): void {
  expect(answer.status, answer.text).toBeGreaterThanOrEqual(400);
  expect(answer.status, answer.text).toBeLessThan(500);
  expect(answer.contentType).toContain('application/json');
  const body = JSON.parse(answer.text) as { error?: { message?: unknown } };
  expect(typeof body.error?.message).toBe('string');
}

/** Either served (200) or refused with a 4xx JSON error: never a 5xx, never a hang. */
function expectServedOrRefused(answer: Answer): void {
  if (answer.status === 200) return;
  expectJsonClientError(answer);
}

const VALID_BODIES: Record<string, Record<string, unknown>> = {
  'chat/completions': { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
  responses: { model: 'm', input: [{ role: 'user', content: 'hi' }] },
  messages: { model: 'm', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
  'messages/count_tokens': { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
};
const MODEL_ROUTES = Object.keys(VALID_BODIES);

describe('interception under hostile input', () => {
  let rollout: InterceptedRollout;
  const auth = (route: string): Record<string, string> =>
    route.startsWith('messages')
      ? { 'x-api-key': rollout.session.secret, 'content-type': 'application/json' }
      : { authorization: `Bearer ${rollout.session.secret}`, 'content-type': 'application/json' };

  beforeAll(async () => {
    rollout = await startInterceptedRollout({ script: () => 'ok', keepLog: false, interception: { maxBodyBytes: 64 * 1024 } });
  });
  afterAll(() => rollout.close());

  it('answers random bytes on every model route with a 4xx JSON error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...MODEL_ROUTES), fc.uint8Array({ maxLength: 2048 }), async (route, bytes) => {
        const answer = await send({ url: `${rollout.baseUrl}/${route}`, headers: auth(route), body: bytes });
        // A few byte strings are valid JSON ("1", "[]"): count_tokens may count them.
        if (route === 'messages/count_tokens') expectServedOrRefused(answer);
        else expectJsonClientError(answer);
      }),
      { numRuns: 80 },
    );
  });

  it('answers random JSON values on every model route with a 4xx JSON error (or serves the rare valid one)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...MODEL_ROUTES), fc.jsonValue(), async (route, value) => {
        const answer = await send({ url: `${rollout.baseUrl}/${route}`, headers: auth(route), body: JSON.stringify(value) });
        expectServedOrRefused(answer);
      }),
      { numRuns: 80 },
    );
  });

  it('serves or refuses (4xx JSON) valid bodies with one field replaced, removed or nested garbage', async () => {
    const mutation = fc.record({
      field: fc.constantFrom(
        'model',
        'messages',
        'input',
        'max_tokens',
        'stream',
        'tools',
        'tool_choice',
        'system',
        'temperature',
        'instructions',
        'previous_response_id',
      ),
      value: fc.oneof(
        fc.jsonValue(),
        fc.constant(undefined),
        fc.array(fc.record({ role: fc.string(), content: fc.jsonValue() }), { maxLength: 3 }),
      ),
    });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...MODEL_ROUTES), mutation, async (route, { field, value }) => {
        const body: Record<string, unknown> = { ...VALID_BODIES[route] };
        if (value === undefined) delete body[field];
        else body[field] = value;
        const answer = await send({ url: `${rollout.baseUrl}/${route}`, headers: auth(route), body: JSON.stringify(body) });
        expectServedOrRefused(answer);
      }),
      { numRuns: 120 },
    );
  });

  it('refuses truncated valid bodies with a 4xx JSON error', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...MODEL_ROUTES),
        fc.double({ min: 0, max: 0.99, noNaN: true }),
        async (route, fraction) => {
          const text = JSON.stringify(VALID_BODIES[route]);
          const answer = await send({
            url: `${rollout.baseUrl}/${route}`,
            headers: auth(route),
            body: text.slice(0, Math.floor(text.length * fraction)),
          });
          expectJsonClientError(answer);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('refuses a body over the size limit with 413, even when it is streamed without a length', async () => {
    const big = new Uint8Array(200 * 1024).fill(0x61);
    expect(
      (await send({ url: `${rollout.baseUrl}/chat/completions`, headers: auth('chat/completions'), body: big })).status,
    ).toBe(413);
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 20; i++) controller.enqueue(new Uint8Array(16 * 1024).fill(0x62));
        controller.close();
      },
    });
    const response = await fetch(`${rollout.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: auth('chat/completions'),
      body: chunked,
      duplex: 'half',
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    } as RequestInit);
    expect(response.status).toBe(413);
  });

  it('answers random or missing keys with 401, and random paths and methods with a 4xx JSON error unless they name a route', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...MODEL_ROUTES, 'models'),
        fc.option(fc.stringMatching(/^[\x21-\x7e]{1,80}$/), { nil: undefined }),
        async (route, key) => {
          const headers: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}`, 'x-api-key': key };
          const answer = await send({
            url: `${rollout.baseUrl}/${route}`,
            method: route === 'models' ? 'GET' : 'POST',
            headers,
            body: route === 'models' ? undefined : '{}',
          });
          expect(answer.status).toBe(401);
          expectJsonClientError(answer);
        },
      ),
      { numRuns: 100 },
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'), fc.webPath(), async (method, path) => {
        const answer = await send({
          url: `${rollout.interception.url}${path.startsWith('/') ? path : `/${path}`}`,
          method,
          headers: auth('chat/completions'),
          body: method === 'GET' ? undefined : '{}',
        });
        expectServedOrRefused(answer);
      }),
      { numRuns: 100 },
    );
  });

  it('survives raw non-HTTP garbage on its socket and keeps serving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 512 }), async (bytes) => {
        const port = Number(new URL(rollout.interception.url).port);
        await new Promise<void>((resolve) => {
          const socket = connect({ host: '127.0.0.1', port }, () => {
            socket.end(Buffer.from(bytes));
          });
          socket.on('data', () => {});
          socket.on('error', () => resolve());
          socket.on('close', () => resolve());
          socket.setTimeout(REQUEST_TIMEOUT_MS, () => {
            socket.destroy();
            resolve();
          });
        });
      }),
      { numRuns: 50 },
    );
    const models = await send({ url: `${rollout.baseUrl}/models`, method: 'GET', headers: auth('chat/completions') });
    expect(models.status).toBe(200);
  });
});

describe('the config loader under random configs', () => {
  const FIELDS = ['model', 'rollouts', 'concurrency', 'numTasks', 'outputs', 'passThreshold', 'client', 'sampling', 'env'];
  const valid = { model: 'm', env: { id: 'single-agent' } };

  it('parseEvalConfig accepts a value or throws a ConfigError naming the field it was given', () => {
    fc.assert(
      fc.property(fc.constantFrom(...FIELDS), fc.jsonValue(), (field, value) => {
        try {
          parseEvalConfig({ ...valid, [field]: value });
        } catch (error) {
          expect(TroupeError.isInstance(error) && error.name).toBe('ConfigError');
          expect((error as Error).message).toContain(field);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('parseEvalConfig names an unknown key, and never throws anything but a ConfigError on random objects', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue(), { maxKeys: 6 }), (raw) => {
        try {
          parseEvalConfig(raw);
        } catch (error) {
          expect(TroupeError.isInstance(error) && error.name).toBe('ConfigError');
          // The message names a key of the input, or the required `model`.
          const message = (error as Error).message;
          expect(message).toMatch(/^invalid config: /);
          expect(
            ['model', ...Object.keys(raw)].some((key) => message.includes(key)),
            message,
          ).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  describe('Env.create', () => {
    let scripted: ScriptedClient;
    beforeAll(async () => {
      scripted = await scriptedClient({ script: () => 'ok' });
    });
    afterAll(() => scripted.close());

    const AGENT_FIELDS = [
      'maxTurns',
      'maxInputTokens',
      'maxOutputTokens',
      'maxTotalTokens',
      'timeout',
      'retries',
      'trainable',
      'sampling',
      'model',
      'harness',
      'runtime',
    ];
    const ENV_FIELDS = ['timeout', 'retries', 'maxConcurrentAgents', 'taskset', 'notAField'];

    it('accepts a role field or throws a ConfigError naming env.agent.<field>', async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...AGENT_FIELDS), fc.jsonValue(), async (field, value) => {
          try {
            await Env.create({
              definition: singleAgentEnv,
              config: { id: 'single-agent', agent: { harness: 'null', runtime: 'local', [field]: value } },
              run: { model: 'scripted-model', client: scripted.client },
            });
          } catch (error) {
            expect(TroupeError.isInstance(error) && error.name, String(error)).toBe('ConfigError');
            // Plugin ids are named by the plugin they asked for; every other field by its path.
            if (field === 'harness' || field === 'runtime') expect((error as Error).message).toMatch(new RegExp(`${field}`));
            else expect((error as Error).message).toContain(`env.agent.${field}`);
          }
        }),
        { numRuns: 300 },
      );
    });

    it('accepts an env field or throws a ConfigError naming env.<field>', async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...ENV_FIELDS), fc.jsonValue(), async (field, value) => {
          try {
            await Env.create({
              definition: singleAgentEnv,
              config: { id: 'single-agent', agent: { harness: 'null' }, [field]: value },
              run: { model: 'scripted-model', client: scripted.client },
            });
          } catch (error) {
            expect(TroupeError.isInstance(error) && error.name, String(error)).toBe('ConfigError');
            expect((error as Error).message).toContain(`env.${field}`);
          }
        }),
        { numRuns: 300 },
      );
    });
  });
});

describe('env parsers under random model replies', () => {
  it('parseProposal returns a non-empty problem with a safe integer answer, or throws a ParseError', () => {
    const jsonish = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.record({ problem: fc.jsonValue(), answer: fc.jsonValue() }).map((v) => `Here it is:\n${JSON.stringify(v)}`),
      fc.tuple(fc.string(), fc.string(), fc.string()).map(([a, b, c]) => `${a}{"problem": "${b}\\frac", "answer": ${c}}`),
    );
    fc.assert(
      fc.property(jsonish, (reply) => {
        try {
          const proposal = parseProposal(reply);
          expect(proposal.problem.trim().length).toBeGreaterThan(0);
          expect(Number.isSafeInteger(proposal.answer)).toBe(true);
        } catch (error) {
          expect(TroupeError.isInstance(error) && error.name, String(error)).toBe('ParseError');
        }
      }),
      { numRuns: 2000 },
    );
  });
});
