import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RolloutSession } from '../../src/interception/rollout-session.ts';
import { defineTool, serveTaskTools } from '../../src/tools/mcp-server.ts';
import { Trace } from '../../src/trace/trace.ts';
import { runHostileEval } from './support/hostile-eval.ts';

// One sandboxed program must not take a run down. Each program below runs as its own process and
// calls one interception server; budgets are lowered so the CI machine stays up (the full-size
// figures — 30 MiB calls against the 64 MiB / 256 MiB defaults — are in the closing note of the
// change that added this suite).

describe('hostile programs in an eval (CI size)', () => {
  it('stops programs making distinct large calls at their byte budget; the run and every sibling are untouched', async () => {
    const result = await runHostileEval({
      hostile: 2,
      benign: 4,
      calls: 20,
      bytes: 256 * 1024,
      concurrency: 12,
      maxTraceBytes: 1024 * 1024,
      interception: { maxBodyBytesInFlight: 1024 * 1024 },
    });
    console.log(`hostile eval (byte budget): ${JSON.stringify({ ...result, outDir: undefined })}`);
    expect(result.finished).toBe(true);
    expect(result.missing).toEqual([]);
    for (const episode of result.episodes.filter((e) => !e.hostile)) {
      expect(episode).toMatchObject({ ok: true, stopCondition: 'agent_completed', calls: 1 });
    }
    for (const episode of result.episodes.filter((e) => e.hostile)) {
      expect(episode.stopCondition).toBe('max_trace_bytes');
      expect(episode.calls).toBeLessThanOrEqual(4);
    }
    // 24 bodies of 256 KiB were in flight at once; at most 1 MiB of them was read at a time.
    expect(result.bodyBudget?.peak).toBeLessThanOrEqual(1024 * 1024);
  });

  it('lets a program with maxTurns 2 reach the model twice, however many calls it makes at once', async () => {
    const result = await runHostileEval({ hostile: 1, benign: 1, calls: 50, bytes: 200, concurrency: 50, maxTurns: 2 });
    expect(result.finished).toBe(true);
    const hostile = result.episodes.find((e) => e.hostile);
    expect(hostile).toMatchObject({ stopCondition: 'max_turns', calls: 2 });
    expect(result.episodes.find((e) => !e.hostile)).toMatchObject({ ok: true, stopCondition: 'agent_completed' });
    // One call of the benign program, two of the hostile one.
    expect(result.modelCalls).toBe(3);
  });
});

describe("a rollout's MCP task-tool server", () => {
  it('serves only requests with the rollout key and a loopback Host; nothing else lands on the trace', async () => {
    const trace = new Trace({ task: { key: 't', hash: 'h', data: {} }, agent: { name: 'solver', trainable: true } });
    const session = new RolloutSession({
      trace,
      client: { model: 'm', complete: () => Promise.reject(new Error('unused')) },
      model: 'm',
    });
    const echo = defineTool({
      name: 'echo',
      description: 'echoes',
      input: z.object({ text: z.string() }),
      handler: ({ text }) => text,
    });
    const served = await serveTaskTools(
      { id: 'bash', capabilities: { supportsMcp: true } },
      { key: 't', tools: [echo] },
      trace,
      session,
    );
    if (!served) throw new Error('no tools served');
    const url = new URL(served.url);
    const send = (path: string, host: string) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'echo', arguments: { text: 'hi' } },
        });
        const req = request(
          {
            host: '127.0.0.1',
            port: url.port,
            path,
            method: 'POST',
            headers: { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    try {
      expect(url.pathname).toBe(`/mcp/${session.secret}`);
      expect(await send('/mcp', url.host)).toBe(401);
      expect(await send(`/mcp/${session.secret}`, `rebound.example:${url.port}`)).toBe(403);
      expect(trace.info.toolCalls).toEqual([]);
      expect(await send(url.pathname, url.host)).toBe(200);
      expect(trace.info.toolCalls).toEqual([{ name: 'echo', args: { text: 'hi' }, result: 'hi', isError: false }]);
    } finally {
      await served.close();
    }
  });
});
