/**
 * pnpm bench:runtimes — sandbox create + first exec latency (p50 / p95 over 20) for the `local`
 * and `docker` runtimes, and docker's against the plain `docker run --rm <image> true` CLI (the
 * baseline), all in one run. Needs an engine: TROUPE_DOCKER_HOST (see tooling/scripts/docker-engine.sh).
 * The last stdout line is one JSON object.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LocalRuntime, type Runtime } from '@troupe/verifiers';
import Docker from 'dockerode';
import { DockerRuntime } from '../src/docker-runtime.ts';

const run = promisify(execFile);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const socket = (process.env.TROUPE_DOCKER_HOST ?? '/var/lib/troupe-docker/docker.sock').replace(/^unix:\/\//, '');
const image = process.env.TROUPE_DOCKER_IMAGE ?? 'troupe-busybox:latest';

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round((sorted[index] ?? Number.NaN) * 10) / 10;
}

async function createAndFirstExec(runtime: Runtime, options: { image?: string } = {}): Promise<number[]> {
  const samples: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    const sandbox = await runtime.createSandbox(options);
    const result = await sandbox.exec('true');
    samples.push(performance.now() - started);
    if (result.exitCode !== 0) throw new Error(`first exec failed in ${runtime.id}: ${result.stderr}`);
    await sandbox.stop();
  }
  return samples;
}

async function dockerCli(): Promise<number[]> {
  const samples: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    await run('docker', ['-H', `unix://${socket}`, 'run', '--rm', '--network', 'none', image, 'true']);
    samples.push(performance.now() - started);
  }
  return samples;
}

const docker = new Docker({ socketPath: socket });
try {
  await docker.ping();
} catch (error) {
  console.error(
    `bench:runtimes needs a Docker engine at ${socket}: run tooling/scripts/docker-engine.sh start (${(error as Error).message})`,
  );
  process.exit(1);
}

const root = await mkdtemp(join(tmpdir(), 'troupe-bench-local-'));
const local = new LocalRuntime({ root });
const dockerRuntime = new DockerRuntime({ docker, image });
// One warm-up each, so image and page caches are hot for all three.
await createAndFirstExec(local).then(
  () => undefined,
  () => undefined,
);
await dockerRuntime.createSandbox().then((sandbox) => sandbox.stop());
await run('docker', ['-H', `unix://${socket}`, 'run', '--rm', '--network', 'none', image, 'true']);

const localSamples = await createAndFirstExec(local);
const dockerSamples = await createAndFirstExec(dockerRuntime);
const cliSamples = await dockerCli();
await local.close();
await dockerRuntime.close();
await rm(root, { recursive: true, force: true });

const figures = {
  local_p50: percentile(localSamples, 50),
  local_p95: percentile(localSamples, 95),
  docker_p50: percentile(dockerSamples, 50),
  docker_p95: percentile(dockerSamples, 95),
  docker_cli_p50: percentile(cliSamples, 50),
  docker_cli_p95: percentile(cliSamples, 95),
};
console.log(`rounds=${ROUNDS} image=${image}`);
console.log(`local   create+first exec  p50 ${figures.local_p50} ms  p95 ${figures.local_p95} ms`);
console.log(`docker  create+first exec  p50 ${figures.docker_p50} ms  p95 ${figures.docker_p95} ms`);
console.log(`docker run --rm true (CLI) p50 ${figures.docker_cli_p50} ms  p95 ${figures.docker_cli_p95} ms`);
console.log(
  JSON.stringify({
    name: 'runtimes.docker_create_first_exec_p50',
    value: figures.docker_p50,
    unit: 'ms',
    baseline: figures.docker_cli_p50,
    ratio: Math.round((figures.docker_p50 / figures.docker_cli_p50) * 1000) / 1000,
    rounds: ROUNDS,
    image,
    ...figures,
  }),
);
