import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelRequest } from '@troupe/verifiers';
import { ScriptedModelServer } from '@troupe/verifiers/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { VllmShapedServer } from '../testing.ts';
import { broadcastStepDir } from './filesystem.ts';
import { AdminCallError, type AdminRetry, InferenceAdmin } from './inference-admin.ts';
import { InferencePool } from './inference-pool.ts';
import { BroadcastWeightRelay } from './weight-relay.ts';

const fastRetry: AdminRetry = { minDelayMs: 5, maxDelayMs: 20, multiplierMs: 5, adminTimeoutMs: 400, updateTimeoutMs: 400 };
const request = (content: string, temperature = 0.7): ModelRequest => ({
  model: 'policy',
  messages: [{ role: 'user', content }],
  sampling: { temperature, maxTokens: 8 },
});

/** The chat calls the servers received since `before` (their counts then). */
const chatSince = (servers: VllmShapedServer[], before: number[]) =>
  servers.flatMap((server, index) => server.chat.slice(before[index]));
const counts = (servers: VllmShapedServer[]) => servers.map((server) => server.chat.length);

/** The successful admin calls of one server, in order (retried failures left out). */
const successes = (server: VllmShapedServer) => server.admin.filter((call) => call.outcome === 'ok').map((call) => call.route);

describe('weight updates on vLLM-shaped servers', () => {
  let model: ScriptedModelServer;
  let servers: VllmShapedServer[];
  let outputDir: string;

  beforeEach(async () => {
    model = await ScriptedModelServer.start({ script: () => 'bet now', vllmTokens: true, latencyMs: 30 });
    // The admin protocol is what these tests hold; weight_dir names directories that do not exist.
    const start = () => VllmShapedServer.start({ upstream: model.url, checkWeightDir: false });
    servers = [await start(), await start()];
    outputDir = await mkdtemp(join(tmpdir(), 'troupe-weights-'));
  });
  afterEach(async () => {
    await Promise.all(servers.map((server) => server.close()));
    await model.close();
    await rm(outputDir, { recursive: true, force: true });
  });

  async function broadcast(step: number): Promise<string> {
    const dir = broadcastStepDir({ outputDir, step });
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'model.safetensors'), 'weights');
    await writeFile(join(dir, 'STABLE'), '');
    return dir;
  }

  it('waits for STABLE, then pauses, updates and resumes every server in order despite 5xx, resets and timeouts', async () => {
    const [a, b] = servers as [VllmShapedServer, VllmShapedServer];
    a.faults.pause.push({ status: 503 });
    a.faults.update_weights.push('hang');
    b.faults.update_weights.push({ status: 500 }, 'reset');
    b.faults.resume.push({ status: 502 });
    const retries: string[] = [];
    const admin = new InferenceAdmin({
      baseUrls: servers.map((server) => server.baseUrl),
      retry: fastRetry,
      onRetry: ({ url, attempt }) => retries.push(`${url.replace(/^http:\/\/127\.0\.0\.1:\d+/, '')}#${attempt}`),
    });
    const pool = new InferencePool({ baseUrls: servers.map((server) => server.baseUrl), model: 'policy' });
    const relay = new BroadcastWeightRelay({ outputDir, admin, inference: pool, pollMs: 10 });

    const advanced = relay.advanceTo({ step: 1 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Nothing happens before the trainer marks the broadcast stable.
    expect(a.admin).toEqual([]);
    const dir = await broadcast(1);
    expect(await advanced).toBe(dir);

    for (const server of servers) {
      expect(successes(server)).toEqual(['pause', 'update_weights', 'resume']);
      expect(server.violations).toEqual([]);
      expect(server.paused).toBe(false);
      expect(server.weightDir).toBe(dir);
      const pause = server.admin.find((call) => call.route === 'pause')!;
      expect(pause.query).toEqual({ mode: 'keep', clear_cache: 'false' });
      expect(
        server.admin
          .filter((call) => call.route === 'update_weights')
          .every((call) => (call.body as { weight_dir: string }).weight_dir === dir),
      ).toBe(true);
    }
    expect(a.admin.map((call) => `${call.route}:${call.outcome}`)).toEqual([
      'pause:status 503',
      'pause:ok',
      'update_weights:hang',
      'update_weights:ok',
      'resume:ok',
    ]);
    expect(b.admin.map((call) => `${call.route}:${call.outcome}`)).toEqual([
      'pause:ok',
      'update_weights:status 500',
      'update_weights:reset',
      'update_weights:ok',
      'resume:status 502',
      'resume:ok',
    ]);
    expect(retries.sort()).toEqual(
      ['/pause?mode=keep&clear_cache=false#1', '/resume#1', '/update_weights#1', '/update_weights#1', '/update_weights#2'].sort(),
    );
    expect(relay.version).toBe(1);
    expect(pool.version).toBe(1);
    // Already at step 1: no second round of calls.
    await relay.advanceTo({ step: 1 });
    expect(a.admin).toHaveLength(5);
  });

  it('resumes every server even when an update fails for good, and a 4xx is not retried', async () => {
    const [a, b] = servers as [VllmShapedServer, VllmShapedServer];
    b.faults.update_weights.push({ status: 400 });
    const admin = new InferenceAdmin({ baseUrls: servers.map((server) => server.baseUrl), retry: fastRetry });
    const error = await admin.updateWeights({ weightDir: '/w/step_3' }).catch((e: unknown) => e);
    expect(AdminCallError.isInstance(error)).toBe(true);
    expect((error as AdminCallError).status).toBe(400);
    expect((error as AdminCallError).attempts).toBe(1);
    expect((error as Error).message).toContain(`POST ${b.root}/update_weights failed: answered 400`);
    expect(b.admin.map((call) => `${call.route}:${call.outcome}`)).toEqual([
      'pause:ok',
      'update_weights:status 400',
      'resume:ok',
    ]);
    expect(successes(a)).toEqual(['pause', 'update_weights', 'resume']);
    expect(a.paused || b.paused).toBe(false);
  });

  it('bounds the attempts: a server that keeps answering 503 fails after maxAttempts, then is resumed', async () => {
    const [a] = servers as [VllmShapedServer];
    for (let i = 0; i < 20; i++) a.faults.update_weights.push({ status: 503 });
    const admin = new InferenceAdmin({ baseUrls: [a.baseUrl], retry: { ...fastRetry, maxAttempts: 3 } });
    await expect(admin.updateWeights({ weightDir: '/w' })).rejects.toThrow(
      /update_weights failed after 3 attempts: answered 503/,
    );
    expect(a.admin.filter((call) => call.route === 'update_weights')).toHaveLength(3);
    expect(a.admin.at(-1)?.route).toBe('resume');
    expect(a.paused).toBe(false);
  });

  it('bounds the time: a hanging pause is retried within twice the per-attempt timeout, then fails', async () => {
    const [a] = servers as [VllmShapedServer];
    for (let i = 0; i < 20; i++) a.faults.pause.push('hang');
    const admin = new InferenceAdmin({ baseUrls: [a.baseUrl], retry: { ...fastRetry, adminTimeoutMs: 100 } });
    const error = await admin.updateWeights({ weightDir: '/w' }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      /\/pause\?mode=keep&clear_cache=false failed after \d attempts: timed out after 100 ms/,
    );
    expect((error as AdminCallError).attempts).toBeLessThan(10);
    expect(a.admin.some((call) => call.route === 'update_weights')).toBe(false);
    expect(a.admin.at(-1)?.route).toBe('resume');
  });

  it('routes to the server with the fewest calls in flight, skips a server whose /liveness fails, and salts by version', async () => {
    const pool = new InferencePool({ baseUrls: servers.map((server) => server.baseUrl), model: 'policy' });
    const replies = await Promise.all([1, 2, 3, 4].map((i) => pool.complete(request(`hand ${i}`))));
    expect(servers.map((server) => server.chat.length)).toEqual([2, 2]);
    for (const reply of replies) {
      expect(reply.completionTokenIds?.length).toBeGreaterThan(0);
      expect(reply.completionLogprobs).toHaveLength(reply.completionTokenIds!.length);
      expect(reply.promptTokenIds?.length).toBeGreaterThan(0);
    }
    for (const call of servers.flatMap((server) => server.chat)) {
      expect(call).toMatchObject({ cacheSalt: '0', returnTokenIds: true, logprobs: true, temperature: 0.7 });
    }
    servers[0]!.live = false;
    expect(await pool.checkHealth()).toEqual([false, true]);
    await Promise.all([5, 6, 7].map((i) => pool.complete(request(`hand ${i}`))));
    expect(servers.map((server) => server.chat.length)).toEqual([2, 5]);
    servers[1]!.live = false;
    await pool.checkHealth();
    await expect(pool.complete(request('none'))).rejects.toThrow(/no live inference server/);
    // A server marked down by a missed check is asked again before a call fails: back up, it answers.
    servers[1]!.live = true;
    const before1 = counts(servers);
    await pool.complete(request('after a missed check'));
    expect(chatSince(servers, before1)).toHaveLength(1);
    expect(pool.health()).toEqual([false, true]);
    servers[0]!.live = true;
    expect(await pool.checkHealth()).toEqual([true, true]);
    pool.setVersion(4);
    const before = counts(servers);
    const after = await pool.complete(request('after update'));
    expect(chatSince(servers, before).map((call) => call.cacheSalt)).toEqual(['4']);
    // The server names no version (as vLLM): the pool records the one it served, on the reply and so in the trace.
    expect(replies.map((reply) => reply.policyVersion)).toEqual([0, 0, 0, 0]);
    expect(after.policyVersion).toBe(4);
  });

  it('sends calls to the server with fewer calls in flight, not in turn: a held server gets none', async () => {
    const [a, b] = servers as [VllmShapedServer, VllmShapedServer];
    const pool = new InferencePool({ baseUrls: [a.baseUrl, b.baseUrl], model: 'policy' });
    // Server a holds chat requests (as vLLM does while paused); the first call lands there.
    a.paused = true;
    const held = pool.complete(request('held'));
    await vi.waitFor(() => expect(pool.outstanding()).toEqual([1, 0]));
    // In turn, every second call would go to a and hang; by calls in flight all go to b.
    for (const i of [1, 2, 3, 4]) await pool.complete(request(`quick ${i}`));
    expect(b.chat).toHaveLength(4);
    expect(pool.outstanding()).toEqual([1, 0]);
    await fetch(`${a.root}/resume`, { method: 'POST' });
    await held;
    expect(a.chat).toHaveLength(1);
    expect(pool.outstanding()).toEqual([0, 0]);
    expect(a.violations).toEqual([]);
  });

  it('records the policy versions a rollout spans and the temperature of every sampled token', async () => {
    const admin = new InferenceAdmin({ baseUrls: servers.map((server) => server.baseUrl), retry: fastRetry });
    const pool = new InferencePool({ baseUrls: servers.map((server) => server.baseUrl), model: 'policy' });
    const relay = new BroadcastWeightRelay({ outputDir, admin, inference: pool, pollMs: 10 });
    const rollout = pool.rollout();
    expect(rollout.span).toBeNull();
    const first = await rollout.complete(request('turn one', 0.7));
    await broadcast(1);
    await relay.advanceTo({ step: 1 });
    const second = await rollout.complete(request('turn two', 1.0));
    expect(rollout.span).toEqual({ start: 0, end: 1 });
    // Both turns keep the salt of the version the rollout started under.
    expect(servers.flatMap((server) => server.chat).map((call) => call.cacheSalt)).toEqual(['0', '0']);
    expect(rollout.completionTemperatures()).toEqual([
      ...first.completionTokenIds!.map(() => 0.7),
      ...second.completionTokenIds!.map(() => 1.0),
    ]);
    expect(rollout.calls.map((call) => [call.versionAtStart, call.versionAtEnd])).toEqual([
      [0, 0],
      [1, 1],
    ]);
    // A fresh rollout after the update is salted with the new version.
    const before = counts(servers);
    await pool.rollout().complete(request('new rollout'));
    expect(chatSince(servers, before).map((call) => call.cacheSalt)).toEqual(['1']);
  });
});
