import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { Harness } from '@troupe/verifiers';
import { SandboxError } from '@troupe/verifiers';
import { hostPidsWith } from '@troupe/verifiers/testing';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { type JudgeTool, runAgenticJudgeEpisode, runThiefJudgeEpisode } from './agentic-judge-scenario.ts';
import { installForIntegrationTest } from './shell-tool-scenario.ts';

/** An npm-program harness class as {@link describeAgenticJudgeHarness} needs it. */
export interface JudgeHarnessClass {
  new (options: { allowLocal: boolean }): Harness;
  readonly id: string;
  readonly installer: { readonly packageName: string };
}

/**
 * The real-CLI judge test of an npm-program harness: an `agentic-judge` episode whose judge is the
 * real program (cached in ~/.cache/troupe/harnesses; skipped, with the reason, when npm is out of
 * reach) on the `local` runtime, the solver the `bash` harness, one scripted model answering both
 * (`agenticJudgeScript`), the judge through the program's own `dialect` and its shell tool
 * `judgeTool`. The solver is scored from the verdict the judge wrote after re-running its file; the
 * judge never trains, and the rollout secret stays out of every trace.
 */
export function describeAgenticJudgeHarness(options: {
  harness: JudgeHarnessClass;
  /** The interception dialect the judge's calls arrive in. */
  dialect: string;
  judgeTool: JudgeTool;
}): void {
  const { harness: HarnessClass } = options;
  describe(`agentic-judge with the real ${HarnessClass.id} CLI as judge`, () => {
    let unavailable: string | null = null;

    beforeAll(async () => {
      // Install once into the host cache (a no-op when the harness's own integration test ran).
      unavailable = await installForIntegrationTest({
        harness: new HarnessClass({ allowLocal: true }),
        packageName: HarnessClass.installer.packageName,
        timeoutMs: 600_000,
      });
    }, 660_000);

    it(`scores the solver from the verdict ${HarnessClass.id} wrote after re-running its file; the judge never trains`, async (context) => {
      if (unavailable) context.skip(unavailable);
      // The env loads the harness by id like any plugin; the spy only reads the rollout secret it is given.
      const launch = vi.spyOn(HarnessClass.prototype as Harness, 'launch');
      try {
        const episode = await runAgenticJudgeEpisode({
          judge: { id: HarnessClass.id, allowLocal: true, timeoutMs: 240_000 },
          judgeTool: options.judgeTool,
        });

        expect(episode.errors).toEqual([]);
        expect(episode.ok).toBe(true);
        const solver = episode.traces.find((t) => t.agent.name === 'solver');
        const judge = episode.traces.find((t) => t.agent.name === 'judge');
        expect(judge?.ok).toBe(true);
        expect(judge?.agent).toMatchObject({ harness: HarnessClass.id, trainable: false, runtime: 'local' });
        expect(judge?.calls.length).toBeGreaterThanOrEqual(2);
        expect(new Set(judge?.calls.map((c) => c.dialect))).toEqual(new Set([options.dialect]));
        expect(judge?.calls[0]?.finishReason).toBe('tool_calls');
        expect(judge?.info.artifacts).toEqual({ restored: ['answer.sh'], missing: [] });
        expect(judge?.info.verdict).toMatchObject({
          score: 1,
          verdicts: [{ name: 'solved', verdict: 'yes', reason: 'sh answer.sh printed 42' }],
        });
        expect(solver?.agent.trainable).toBe(true);
        expect(solver?.metrics['judge/solved']).toBe(1);
        expect(solver?.rewards.judge).toEqual({ score: 1, weight: 1 });

        // The program's own conversation: none of its calls is a side call.
        expect(judge?.calls.filter((c) => c.side || c.ended)).toEqual([]);
        expect(launch).toHaveBeenCalledTimes(1);
        const secret = launch.mock.calls[0]?.[0].endpoint.secret ?? '';
        expect(secret).toMatch(/^rs-/);
        for (const trace of episode.traces) expect(JSON.stringify(trace.toJSON())).not.toContain(secret);
      } finally {
        launch.mockRestore();
      }
    }, 300_000);

    // A wrong answer.sh leaves a thief behind when the judge runs it: it finds the judge program's
    // endpoint and secret, asks for a "yes" while the judge works and after its final reply, and
    // tries to hold one call open. The honest "no" stands, the episode ends, and no thief call
    // reaches the model: on local the stolen secret is refused from the thief's process, in a
    // container the sealed program's secret is out of the thief's reach.
    for (const [where, mode, shared] of [
      ['local', 'isolated', false],
      ['local', 'shared', true],
      ['docker', 'isolated', false],
      ['docker', 'shared', true],
      ['docker-host-network', 'isolated', false],
      ['podman', 'isolated', false],
      ['podman', 'shared', true],
    ] as const) {
      it(`keeps the honest "no" of ${HarnessClass.id} against a thief its run of answer.sh leaves behind (${where}, ${mode})`, async (context) => {
        if (unavailable) context.skip(unavailable);
        const runtime =
          where === 'local'
            ? undefined
            : where === 'podman'
              ? await debianPodman()
              : debianDocker({ network: where === 'docker-host-network' });
        if (typeof runtime === 'string') context.skip(runtime);
        const marker = `thief-${HarnessClass.id.replace(/_/g, '-')}-${where}-${mode}-${Date.now()}`;
        try {
          const { episode, thiefCalls } = await runThiefJudgeEpisode({
            judge: { id: HarnessClass.id, allowLocal: true, timeoutMs: 120_000 },
            judgeTool: options.judgeTool,
            marker,
            shared,
            ...(runtime ? { runtime } : {}),
          });
          const solver = episode.traces.find((t) => t.agent.name === 'solver');
          const judge = episode.traces.find((t) => t.agent.name === 'judge');
          expect(judge?.errors).toEqual([]);
          expect(judge?.info.verdict).toMatchObject({ score: 0, verdicts: [{ name: 'solved', verdict: 'no' }] });
          expect(solver?.rewards.judge).toEqual({ score: 0, weight: 1 });
          const own = judge?.calls.filter((c) => !c.side && !c.ended) ?? [];
          const theirs = judge?.calls.filter((c) => c.side || c.ended) ?? [];
          expect(own.length).toBeGreaterThanOrEqual(2);
          expect(own.every((c) => c.dialect === options.dialect)).toBe(true);
          // No call of the thief reached the model. On `local` the secret is within its reach (the
          // program's /proc/<pid>/environ) and it calls with it: bound to the program's own
          // process, the secret is refused from the thief's, on the trace as refused calls. In a
          // container the program runs sealed (non-dumpable): no environ holds the secret for it.
          expect(thiefCalls).toBe(0);
          const judgeText = JSON.stringify(judge?.toJSON());
          if (where === 'local') {
            expect(judgeText).toContain('secret found');
            expect(judge?.metrics['calls/other_process'] ?? 0).toBeGreaterThan(0);
            expect(theirs.some((c) => c.ended === 'refused' && /bound to the process/.test(c.error?.message ?? ''))).toBe(true);
          } else {
            expect(judgeText).toContain('secret not found');
          }
          expect(hostPidsWith(marker)).toEqual([]);
        } finally {
          rmSync(`/tmp/thief-${marker}.sh`, { force: true });
        }
      }, 180_000);
    }
  });
}

/**
 * The `docker` runtime table on the Debian image the real CLIs need (`troupe-debian:bookworm`, built
 * by tooling/scripts/docker-engine.sh; CI exports the engine's socket as TROUPE_DOCKER_HOST), with
 * the host network when `options.network` (else none: interception is forwarded in), or
 * why it cannot be used. Under `CI=true` a missing engine or image fails the test instead.
 */
function debianDocker(options: { network: boolean }): ({ id: string } & Record<string, unknown>) | string {
  const socketPath = process.env.TROUPE_DOCKER_HOST?.replace(/^unix:\/\//, '');
  let why: string | null = null;
  if (!socketPath) why = 'TROUPE_DOCKER_HOST is not set (start an engine with tooling/scripts/docker-engine.sh start)';
  else {
    try {
      execFileSync('docker', ['-H', `unix://${socketPath}`, 'image', 'inspect', DEBIAN_IMAGE], { stdio: 'ignore' });
    } catch {
      why = `the engine at ${socketPath} has no ${DEBIAN_IMAGE} image (TROUPE_DOCKER_IMAGES="busybox debian" tooling/scripts/docker-engine.sh start)`;
    }
  }
  if (why === null) {
    return { id: 'docker', socketPath: socketPath as string, image: DEBIAN_IMAGE, ...(options.network ? { network: true } : {}) };
  }
  if (process.env.CI === 'true') throw new SandboxError(`the real-CLI judge tests on Docker need an engine under CI: ${why}`);
  return why;
}

const DEBIAN_IMAGE = 'troupe-debian:bookworm';

/**
 * The `podman` runtime table on the same Debian image (TROUPE_PODMAN_HOST, started by
 * tooling/scripts/podman-engine.sh), or why it cannot be used. The image is copied once from the
 * Docker engine (its `images/<name>/get` archive into podman's `images/load`) when podman lacks it.
 * Under `CI=true` a missing engine or image fails the test instead.
 */
function debianPodman(): Promise<({ id: string } & Record<string, unknown>) | string> {
  podmanTable ??= (async () => {
    const socketPath = process.env.TROUPE_PODMAN_HOST?.replace(/^unix:\/\//, '');
    const docker = debianDocker({ network: false });
    let why: string | null = typeof docker === 'string' ? docker : null;
    if (!socketPath) why = 'TROUPE_PODMAN_HOST is not set (start an engine with tooling/scripts/podman-engine.sh start)';
    else if (why === null && !(await podmanHasImage(socketPath))) {
      try {
        await copyImageToPodman({ from: String((docker as Record<string, unknown>).socketPath), to: socketPath });
      } catch (error) {
        // Another test file may have loaded it meanwhile (each worker copies when it finds none).
        if (!(await podmanHasImage(socketPath))) {
          why = `cannot copy ${DEBIAN_IMAGE} from Docker to podman: ${(error as Error).message}`;
        }
      }
    }
    if (why === null) return { id: 'podman', socketPath: socketPath as string, image: `localhost/${DEBIAN_IMAGE}` };
    if (process.env.CI === 'true') throw new SandboxError(`the real-CLI judge tests on podman need an engine under CI: ${why}`);
    return why;
  })();
  return podmanTable;
}
let podmanTable: Promise<({ id: string } & Record<string, unknown>) | string> | undefined;

/** Whether the podman engine at `socketPath` has the Debian image. */
function podmanHasImage(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpRequest({ socketPath, path: `/images/localhost/${DEBIAN_IMAGE}/json`, method: 'GET' }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** Streams the Debian image's archive from the Docker engine at `from` into the podman engine at `to`. */
function copyImageToPodman(options: { from: string; to: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    const get = httpRequest({ socketPath: options.from, path: `/images/${DEBIAN_IMAGE}/get`, method: 'GET' }, (archive) => {
      if (archive.statusCode !== 200) {
        archive.resume();
        reject(new SandboxError(`docker answered ${archive.statusCode}`));
        return;
      }
      const load = httpRequest(
        { socketPath: options.to, path: '/images/load', method: 'POST', headers: { 'content-type': 'application/x-tar' } },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode === 200 ? resolve() : reject(new SandboxError(`podman answered ${res.statusCode}`)),
          );
        },
      );
      load.on('error', reject);
      archive.pipe(load);
    });
    get.on('error', reject);
    get.end();
  });
}
