import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contentText, Env, registerRuntime, runEval, singleAgentEnv, Task, Taskset } from '@troupe/verifiers';
import { scriptedClient } from '@troupe/verifiers/testing';
import Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { DockerRuntime } from './docker-runtime.ts';

/**
 * Docker sandboxes under a hostile or failing rollout (moved from the core's security suite: the
 * core's tests load no runtime plugin). Needs a real engine: `tooling/scripts/docker-engine.sh
 * start`; CI exports its socket as TROUPE_DOCKER_HOST.
 */
const dockerSocket = process.env.TROUPE_DOCKER_HOST?.replace(/^unix:\/\//, '');
const image = process.env.TROUPE_DOCKER_IMAGE ?? 'troupe-busybox:latest';

/** `size` tasks whose prompts name their index (`Task N:`), so a request maps back to its task. */
function indexedTaskset(size: number): Taskset {
  return Taskset.fromTasks(
    'docker-isolation',
    Array.from(
      { length: size },
      (_, index) =>
        new Task(
          { idx: index, prompt: `Task ${index}: run hostname.` },
          { key: `docker-isolation-${index}`, rewards: [{ name: 'replied', fn: () => 1 }] },
        ),
    ),
  );
}

describe.skipIf(!dockerSocket)('Docker sandboxes (TROUPE_DOCKER_HOST)', () => {
  it('have no network interface but lo unless asked, and one more when asked', async () => {
    const runtime = new DockerRuntime({ docker: new Docker({ socketPath: dockerSocket as string }), image });
    try {
      const closed = await runtime.createSandbox({ image });
      expect((await closed.exec('ls /sys/class/net')).stdout.trim().split(/\s+/)).toEqual(['lo']);
      await closed.stop();
      const open = await runtime.createSandbox({ image, network: true });
      expect((await open.exec('ls /sys/class/net')).stdout.trim().split(/\s+/).length).toBeGreaterThan(1);
      await open.stop();
    } finally {
      await runtime.close();
    }
  });

  it('give a SandboxError on the trace when the container is removed mid-rollout, and the run goes on', async () => {
    const docker = new Docker({ socketPath: dockerSocket as string });
    registerRuntime('docker_isolation', () => new DockerRuntime({ docker, image }));
    const indexOf = (text: string) => Number(/Task (\d+):/.exec(text)?.[1] ?? 0);
    const scripted = await scriptedClient({
      script: async (request) => {
        const first = request.messages.find((m) => m.role === 'user');
        const index = indexOf(first ? contentText(first.content) : '');
        const last = request.messages.at(-1);
        if (last?.role === 'user') return { toolCalls: [{ name: 'bash', arguments: { command: 'hostname' } }] };
        if (last?.role === 'tool' && index % 2 === 1 && last.content.includes('stdout:')) {
          const id = last.content.match(/stdout:\n<<<\S+\n(\S+)/)?.[1];
          if (id) {
            await docker
              .getContainer(id)
              .remove({ force: true })
              .catch(() => {});
            return { toolCalls: [{ name: 'bash', arguments: { command: 'ls' } }] };
          }
        }
        return 'Done. 0';
      },
    });
    try {
      const env = await Env.create({
        definition: singleAgentEnv,
        config: { id: 'single-agent', agent: { harness: 'bash', runtime: 'docker-isolation' } },
        run: { model: 'scripted-model', client: scripted.client },
      });
      const outDir = mkdtempSync(join(tmpdir(), 'troupe-docker-death-'));
      await runEval({ env, taskset: indexedTaskset(4), outDir, model: 'scripted-model', concurrency: 4 });
      const episodes = readFileSync(join(outDir, 'traces.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(episodes).toHaveLength(4);
      for (const episode of episodes) {
        const index = Number(String(episode.task.key).replace('docker-isolation-', ''));
        const types = episode.traces[0].errors.map((e: { type: string }) => e.type);
        expect(types, episode.task.key).toEqual(index % 2 === 1 ? ['SandboxError'] : []);
      }
    } finally {
      await scripted.close();
    }
  });
});
