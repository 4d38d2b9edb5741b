import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, dirname, join, resolve as resolvePath } from 'node:path';
import { exportOnnx, PolicyModelClient } from '@troupe/prime-rl/inference';
import { loadEmbeddedCheckpoint } from '@troupe/prime-rl/orchestrator';
import { TimeoutError, WireRequestError } from '@troupe/verifiers';
import { chatDialect } from '@troupe/verifiers/internal';

/** Options of {@link serveInference}. */
export interface ServeInferenceOptions {
  /** A run's `checkpoint/` or a trainer broadcast `broadcasts/step_<N>/` (waited for when absent). */
  checkpoint: string;
  host?: string;
  /** 0 picks a free port (the URL is in the result). */
  port: number;
  /** Model name served (default `policy`, the `[inference]` default). */
  model?: string;
  seed?: number;
  /** Completion tokens when a request sets no `max_tokens` (default 16). */
  maxTokens?: number;
  maxBatch?: number;
  maxWaitMs?: number;
  /** Seconds to wait for the checkpoint to appear (default 600). */
  waitSeconds?: number;
  log?: (line: string) => void;
}

/** A running policy server. */
export interface InferenceServer {
  /** OpenAI base URL, e.g. `http://127.0.0.1:8000/v1`. */
  readonly baseUrl: string;
  /** Resolves once the checkpoint is loaded (or failed to load: `/liveness` then answers 503). */
  readonly ready: Promise<void>;
  /** Policy version served (the checkpoint's step; -1 while loading). */
  readonly version: number;
  /** Admin calls received, in order (`pause`, `update_weights <dir>`, `resume`). */
  readonly adminCalls: readonly string[];
  close(): Promise<void>;
}

async function waitForCheckpoint(dir: string, waitSeconds: number) {
  const deadline = Date.now() + waitSeconds * 1000;
  for (;;) {
    // A trainer broadcast is complete once STABLE is there; a run checkpoint once meta.json is.
    const broadcast = /^step_\d+$/.test(basename(dir)) && basename(dirname(dir)) === 'broadcasts';
    const stable = !broadcast || existsSync(join(dir, 'STABLE'));
    if (stable && existsSync(join(dir, 'meta.json'))) {
      const loaded = await loadEmbeddedCheckpoint(dir).catch(() => null);
      if (loaded) return loaded;
    }
    if (Date.now() >= deadline) throw new TimeoutError(`serve-inference: no checkpoint in ${dir} after ${waitSeconds} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function readBody(request: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (!text.trim()) return resolve({});
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new WireRequestError('body is not JSON'));
      }
    });
    request.on('error', reject);
  });
}

function send(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/**
 * The loopback stand-in for prime-rl's vLLM server: the embedded ONNX policy of a checkpoint as
 * an OpenAI-compatible server. `POST /v1/chat/completions` (with vLLM's `return_token_ids`,
 * `logprobs`, `cache_salt` accepted), `GET /v1/models`, and the admin routes prime-rl's
 * orchestrator calls: `POST /pause` (new requests wait; answers once in-flight ones are done),
 * `POST /update_weights {"weight_dir"}` (loads the checkpoint there; its step becomes the
 * version), `POST /resume`, `GET /liveness`.
 */
export async function serveInference(options: ServeInferenceOptions): Promise<InferenceServer> {
  const log = options.log ?? (() => {});
  const make = (l: NonNullable<Awaited<ReturnType<typeof loadEmbeddedCheckpoint>>>) =>
    PolicyModelClient.create({
      tokenizer: l.tokenizer,
      config: l.policy,
      onnx: exportOnnx({ config: l.policy, weights: l.checkpoint.weights }),
      version: l.checkpoint.step,
      maxBatch: options.maxBatch ?? 512,
      maxWaitMs: options.maxWaitMs ?? 0,
      maxTokens: options.maxTokens ?? 16,
      seed: options.seed ?? 0,
      ...(options.model ? { model: options.model } : {}),
    });
  // Listening at once (the URL is known), live once the checkpoint is loaded, as vLLM.
  let client: PolicyModelClient | null = null;
  let shape = '';
  let loadError: unknown = null;
  const model = options.model ?? 'policy';
  const adminCalls: string[] = [];
  let paused = false;
  let resumed: (() => void)[] = [];
  let inFlight = 0;
  let drained: (() => void)[] = [];
  const whenResumed = () => (paused ? new Promise<void>((resolve) => resumed.push(resolve)) : Promise.resolve());
  const whenDrained = () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => drained.push(resolve)));

  async function chat(request: IncomingMessage, response: ServerResponse) {
    const parsed = chatDialect.parseRequest(await readBody(request));
    await whenResumed();
    if (!client) throw new WireRequestError('the model is still loading', { status: 503 });
    inFlight++;
    try {
      const reply = await client.complete({ ...parsed.request, model });
      if (parsed.stream) {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const frame of chatDialect.renderStream(reply, parsed)) response.write(frame);
        response.end();
      } else send(response, 200, chatDialect.renderResponse(reply, parsed));
    } finally {
      inFlight--;
      if (inFlight === 0) {
        for (const resolve of drained) resolve();
        drained = [];
      }
    }
  }

  async function updateWeights(request: IncomingMessage, response: ServerResponse) {
    const body = (await readBody(request)) as { weight_dir?: unknown };
    if (typeof body.weight_dir !== 'string')
      throw new WireRequestError('weight_dir: a directory is required', { param: 'weight_dir' });
    adminCalls.push(`update_weights ${body.weight_dir}`);
    const next = await loadEmbeddedCheckpoint(body.weight_dir);
    if (!next)
      throw new WireRequestError(`weight_dir: no checkpoint in ${body.weight_dir}`, { status: 404, param: 'weight_dir' });
    const nextShape = JSON.stringify([next.tokenizer.toJSON(), next.policy]);
    await whenDrained();
    if (client && nextShape === shape) {
      await client.updateWeights({
        onnx: exportOnnx({ config: next.policy, weights: next.checkpoint.weights }),
        version: next.checkpoint.step,
      });
    } else {
      client = await make(next);
      shape = nextShape;
    }
    send(response, 200, { status: 'ok', version: client.version });
  }

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const route = `${request.method} ${url.pathname.replace(/\/+$/, '')}`;
    const handle = async () => {
      switch (route) {
        case 'GET /liveness':
        case 'GET /health':
          if (!client) return send(response, 503, { status: loadError ? `failed: ${(loadError as Error).message}` : 'loading' });
          return send(response, 200, { status: 'ok', version: client.version });
        case 'GET /v1/models':
          return send(response, 200, { object: 'list', data: [{ id: model, object: 'model', owned_by: 'troupe' }] });
        case 'POST /v1/chat/completions':
          return chat(request, response);
        case 'POST /pause':
          adminCalls.push('pause');
          paused = true;
          await whenDrained();
          return send(response, 200, { status: 'paused', mode: url.searchParams.get('mode') ?? 'keep' });
        case 'POST /resume':
          adminCalls.push('resume');
          paused = false;
          for (const resolve of resumed) resolve();
          resumed = [];
          return send(response, 200, { status: 'resumed' });
        case 'POST /update_weights':
          return updateWeights(request, response);
        default:
          return send(response, 404, chatDialect.errorBody({ status: 404, message: `no route ${route}` }));
      }
    };
    handle().catch((error: unknown) => {
      const status = WireRequestError.isInstance(error) ? error.status : 500;
      if (status >= 500) log(`serve-inference: ${route}: ${(error as Error).stack ?? String(error)}`);
      if (!response.headersSent) send(response, status, chatDialect.errorBody({ status, message: (error as Error).message }));
      else response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const baseUrl = `http://${options.host ?? '127.0.0.1'}:${address.port}/v1`;
  const ready = waitForCheckpoint(resolvePath(options.checkpoint), options.waitSeconds ?? 600)
    .then(async (loaded) => {
      // An /update_weights that came first wins.
      if (!client) {
        client = await make(loaded);
        shape = JSON.stringify([loaded.tokenizer.toJSON(), loaded.policy]);
      }
      log(`serve-inference: ${options.checkpoint} (version ${client.version}) at ${baseUrl}`);
    })
    .catch((error: unknown) => {
      loadError = error;
      log(`serve-inference: ${(error as Error).message}`);
    });
  return {
    baseUrl,
    ready,
    get version() {
      return client?.version ?? -1;
    },
    adminCalls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
