import { parseArgs } from 'node:util';
import { ConfigError, TrainerError } from '@troupe/verifiers';
import { serveInference } from './serve-inference.ts';
import { serveTrainer } from './serve-trainer.ts';

function integer(flag: string, value: string | undefined, fallback?: number): number | undefined {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(`--${flag}: expected a non-negative integer, got ${value}`);
  return n;
}

/** Resolves on SIGINT / SIGTERM. */
function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve(signal));
  });
}

/** `pnpm trainer serve-inference …` and `pnpm trainer serve-trainer …` (the loopback stand-ins of prime-rl's vLLM and trainer). */
export async function serveCommand(command: 'serve-inference' | 'serve-trainer', args: string[]): Promise<number> {
  const log = (line: string) => console.error(line);
  if (command === 'serve-inference') {
    const { values } = parseArgs({
      args,
      options: {
        checkpoint: { type: 'string' },
        host: { type: 'string', default: '127.0.0.1' },
        port: { type: 'string', default: '8000' },
        model: { type: 'string', default: 'policy' },
        seed: { type: 'string', default: '0' },
        'max-tokens': { type: 'string' },
        'wait-seconds': { type: 'string', default: '600' },
      },
    });
    if (!values.checkpoint) throw new ConfigError('serve-inference: --checkpoint DIR is required');
    const maxTokens = integer('max-tokens', values['max-tokens']);
    const server = await serveInference({
      checkpoint: values.checkpoint,
      host: values.host,
      port: integer('port', values.port) as number,
      model: values.model,
      seed: integer('seed', values.seed) as number,
      waitSeconds: integer('wait-seconds', values['wait-seconds']) as number,
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      log,
    });
    // One stdout line a supervisor (or a test) can read the URL from.
    console.log(`listening ${server.baseUrl}`);
    await untilSignal();
    await server.close();
    return 0;
  }
  const { values } = parseArgs({
    args,
    options: {
      'output-dir': { type: 'string' },
      zmq: { type: 'string' },
      'data-world-size': { type: 'string', default: '1' },
      'max-steps': { type: 'string' },
      forever: { type: 'boolean', default: false },
      'no-worker-thread': { type: 'boolean', default: false },
    },
  });
  const outputDir = values['output-dir'];
  if (!outputDir) throw new ConfigError('serve-trainer: --output-dir DIR is required');
  let zmq: { host: string; port: number } | undefined;
  if (values.zmq !== undefined) {
    const match = /^(.+):(\d+)$/.exec(values.zmq);
    if (!match) throw new ConfigError(`--zmq: expected host:port, got ${values.zmq}`);
    zmq = { host: match[1] as string, port: Number(match[2]) };
  }
  const maxSteps = integer('max-steps', values['max-steps']);
  const controller = new AbortController();
  void untilSignal().then((signal) => controller.abort(new TrainerError(`interrupted (${signal})`)));
  console.log(`serving trainer on ${outputDir}`);
  try {
    await serveTrainer({
      outputDir,
      dataWorldSize: integer('data-world-size', values['data-world-size']) as number,
      workerThread: !values['no-worker-thread'],
      forever: values.forever,
      ...(zmq ? { zmq } : {}),
      ...(maxSteps !== undefined ? { maxSteps } : {}),
      log,
      signal: controller.signal,
    });
  } catch (error) {
    if (controller.signal.aborted) return 0;
    throw error;
  }
  return 0;
}
