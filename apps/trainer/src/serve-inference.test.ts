import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initWeights } from '@troupe/prime-rl/orchestrator';
import { PolicyConfigSchema, WordTokenizer } from '@troupe/prime-rl/policy';
import { InferenceAdmin, InferencePool, writeBroadcast } from '@troupe/prime-rl/transport';
import { afterAll, describe, expect, it } from 'vitest';
import { serveInference } from './serve-inference.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('serve-inference (the loopback vLLM: chat completions with token ids + the admin routes)', () => {
  it('serves a broadcast, answers token ids and logprobs, holds requests while paused, loads /update_weights, refuses a bad weight_dir', async () => {
    const outputDir = await mkdtemp(join(tmpdir(), 'serve-inference-'));
    dirs.push(outputDir);
    const tokenizer = WordTokenizer.fromCorpus({ corpus: ['pass bet you hold the king', 'pass', 'bet'] });
    const policy = PolicyConfigSchema.parse({
      vocabSize: tokenizer.size,
      contextLength: 32,
      dModel: 8,
      layers: 1,
      heads: 2,
      ffnMult: 1,
      outputTokens: [tokenizer.id('pass'), tokenizer.id('bet')],
      seed: 3,
    });
    const run = { tokenizer: tokenizer.toJSON(), policy };
    const weights = initWeights(policy);
    const optimizer = { step: 0, m: [], v: [] };
    // The server starts before the trainer's first broadcast exists, as in a three-process start.
    const server = await serveInference({ checkpoint: join(outputDir, 'broadcasts', 'step_0'), port: 0, maxTokens: 1 });
    try {
      const pool = new InferencePool({ baseUrls: [server.baseUrl], model: 'policy' });
      expect(await pool.checkHealth()).toEqual([false]);
      await writeBroadcast({ outputDir, step: 0, weights, optimizer, state: { run } });
      await server.ready;
      await pool.waitUntilLive({ timeoutMs: 10_000, pollMs: 20 });
      expect(server.version).toBe(0);

      const request = {
        model: 'policy',
        messages: [{ role: 'user' as const, content: 'you hold the king' }],
        sampling: { temperature: 1, maxTokens: 1 },
      };
      const reply = await pool.complete(request);
      expect(reply.promptTokenIds?.length).toBeGreaterThan(0);
      expect(reply.completionTokenIds).toHaveLength(1);
      expect([tokenizer.id('pass'), tokenizer.id('bet')]).toContain(reply.completionTokenIds?.[0]);
      expect(reply.completionLogprobs?.[0]).toBeLessThan(0);
      expect(['pass', 'bet']).toContain(reply.message.content);
      // The weights that served the call travel as `policy_version` (issue 17 item 10).
      expect(reply.policyVersion).toBe(0);

      // While paused, a request waits; it is answered after /resume.
      const root = server.baseUrl.replace(/\/v1$/, '');
      expect((await fetch(`${root}/pause?mode=keep&clear_cache=false`, { method: 'POST' })).status).toBe(200);
      let answered = false;
      const waiting = pool.complete(request).then((r) => {
        answered = true;
        return r;
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(answered).toBe(false);
      await fetch(`${root}/resume`, { method: 'POST' });
      expect((await waiting).completionTokenIds).toHaveLength(1);

      // prime-rl's weight update: pause → update_weights → resume; the broadcast's step is the new version.
      const changed = weights.map((w) => ({ ...w, data: w.data.map((x) => x * 2) }));
      const dir = await writeBroadcast({ outputDir, step: 1, weights: changed, optimizer, state: { run } });
      const admin = new InferenceAdmin({ baseUrls: [server.baseUrl] });
      await admin.updateWeights({ weightDir: dir });
      expect(server.version).toBe(1);
      expect(server.adminCalls.slice(-3)).toEqual(['pause', `update_weights ${dir}`, 'resume']);
      expect((await pool.complete(request)).policyVersion).toBe(1);

      const bad = await fetch(`${root}/update_weights`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ weight_dir: join(outputDir, 'nowhere') }),
      });
      expect(bad.status).toBe(404);
      expect(server.version).toBe(1);
      await fetch(`${root}/resume`, { method: 'POST' });
    } finally {
      await server.close();
    }
  });
});
