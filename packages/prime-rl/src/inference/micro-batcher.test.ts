import { describe, expect, it } from 'vitest';
import { MicroBatcher } from './micro-batcher.ts';
import type { OnnxPolicy } from './onnx-policy.ts';

/** A fake policy whose logits at a row encode that row's tokens, recording each forward pass's shape. */
function fakePolicy(calls: { batch: number; time: number }[]): OnnxPolicy {
  return {
    vocabSize: 3,
    async logits({ tokens, batch, time, rows }: { tokens: Int32Array; batch: number; time: number; rows: readonly number[] }) {
      calls.push({ batch, time });
      const out = new Float32Array(rows.length * 3);
      rows.forEach((r, i) => {
        const b = Math.floor(r / time);
        let sum = 0;
        for (let t = 0; t <= r % time; t++) sum = sum * 31 + (tokens[b * time + t] as number);
        out.set([sum, r % time, b], i * 3);
      });
      return out;
    },
  } as unknown as OnnxPolicy;
}

describe('MicroBatcher', () => {
  it('runs requests with the same tokens as one row and answers each with that row’s logits', async () => {
    const calls: { batch: number; time: number }[] = [];
    const batcher = new MicroBatcher({ policy: () => fakePolicy(calls), maxBatch: 64, maxWaitMs: 0, vocabSize: 3 });
    const prompts = [[1, 2, 3], [1, 2], [1, 2, 3], [4], [1, 2, 3], [1, 2]];
    const answers = await Promise.all(prompts.map((p) => batcher.next(p)));
    expect(calls).toEqual([{ batch: 3, time: 3 }]);
    expect(batcher.stats).toMatchObject({ batches: 1, rows: 6, forwardRows: 3, forwardCells: 9 });
    const code = (p: number[]) => p.reduce((s, x) => s * 31 + x, 0);
    answers.forEach((logits, i) => {
      const p = prompts[i] as number[];
      expect(logits[0]).toBe(code(p));
      expect(logits[1]).toBe(p.length - 1);
    });
    // Equal prompts got the same distinct row; different prompts different rows.
    expect(answers[0]?.[2]).toBe(answers[2]?.[2]);
    expect(answers[1]?.[2]).toBe(answers[5]?.[2]);
    expect(new Set(answers.map((a) => a[2])).size).toBe(3);
  });

  it('keeps rows apart whose tokens differ but hash alike', async () => {
    const calls: { batch: number; time: number }[] = [];
    const batcher = new MicroBatcher({ policy: () => fakePolicy(calls), maxBatch: 64, maxWaitMs: 0, vocabSize: 3 });
    // Two rows with the same 32-bit FNV-1a hash (found by search), each sent twice.
    const a = [3903, 2950, 1699];
    const b = [3086, 4987, 2813];
    const answers = await Promise.all([a, b, b, a].map((p) => batcher.next(p)));
    expect(batcher.stats).toMatchObject({ batches: 1, rows: 4, forwardRows: 2 });
    const code = (p: number[]) => p.reduce((s, x) => s * 31 + x, 0);
    expect(answers.map((x) => x[0])).toEqual([code(a), code(b), code(b), code(a)]);
    expect(answers[1]?.[2]).toBe(1);
    expect(answers[2]?.[2]).toBe(1);
  });

  it('with shareRows false runs one row per request, each answered with its own row’s logits', async () => {
    const calls: { batch: number; time: number }[] = [];
    const batcher = new MicroBatcher({
      policy: () => fakePolicy(calls),
      maxBatch: 64,
      maxWaitMs: 0,
      vocabSize: 3,
      shareRows: false,
    });
    const prompts = [[1, 2, 3], [1, 2], [1, 2, 3], [4]];
    const answers = await Promise.all(prompts.map((p) => batcher.next(p)));
    expect(calls).toEqual([{ batch: 4, time: 3 }]);
    expect(batcher.stats).toMatchObject({ batches: 1, rows: 4, forwardRows: 4, forwardCells: 12 });
    const code = (p: number[]) => p.reduce((s, x) => s * 31 + x, 0);
    answers.forEach((logits, i) => {
      expect(logits[0]).toBe(code(prompts[i] as number[]));
      expect(logits[2]).toBe(i);
    });
  });

  it('settles submitted requests in submission order; one failing request leaves the others answered', async () => {
    const calls: { batch: number; time: number }[] = [];
    const batcher = new MicroBatcher({ policy: () => fakePolicy(calls), maxBatch: 64, maxWaitMs: 0, vocabSize: 3 });
    const order: string[] = [];
    const failures: unknown[] = [];
    const request = (name: string, tokens: number[], throws = false) => ({
      tokens,
      settle(logits: Float32Array) {
        order.push(`${name}:${logits[0]}`);
        if (throws) throw new Error(`${name} failed`);
      },
      fail(error: unknown) {
        failures.push(error);
      },
    });
    for (const r of [request('a', [1]), request('b', [2], true), request('c', [1])]) batcher.submit(r);
    const answered = batcher.next([3]);
    expect((await answered)[0]).toBe(3);
    expect(calls).toEqual([{ batch: 3, time: 1 }]);
    expect(order).toEqual(['a:1', 'b:2', 'c:1']);
    expect(failures.map((e) => (e as Error).message)).toEqual(['b failed']);
  });
});
