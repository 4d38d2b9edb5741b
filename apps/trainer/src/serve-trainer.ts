import { initWeights, scheduledStepOptions, type TrainerSchedule, trainerStepMetrics } from '@troupe/prime-rl/orchestrator';
import { PolicyConfigSchema } from '@troupe/prime-rl/policy';
import { localTrainer, type TrainerConfigInput, type TrainerHandle, workerTrainer } from '@troupe/prime-rl/trainer';
import {
  pruneBroadcasts,
  type RunModel,
  readRollouts,
  readRunModel,
  type UnpackedSample,
  unpackMicroBatches,
  type WireMicroBatch,
  writeBroadcast,
  ZmqRolloutReceiver,
} from '@troupe/prime-rl/transport';
import { TrainerError, WireError } from '@troupe/verifiers';
import { sleep } from '@troupe/verifiers/internal';

/** Options of {@link serveTrainer}. */
export interface ServeTrainerOptions {
  /** prime-rl's `output_dir`: `model.json`, `rollouts/`, `broadcasts/`. */
  outputDir: string;
  /** Data-parallel ranks this process reads (it trains them as one batch; default 1). */
  dataWorldSize?: number;
  /** Read rollouts over ZMQ from this orchestrator (SUB `port`, READY to `port + 1`) instead of files. */
  zmq?: { host: string; port: number };
  /** Train in a worker thread (default true). */
  workerThread?: boolean;
  /** Stop after this trainer step (default: the run's `maxSteps`). */
  maxSteps?: number;
  /** After a run's last step, wait for the next run instead of returning. */
  forever?: boolean;
  /** Broadcasts kept besides the newest (default 4; older ones are removed). */
  keepBroadcasts?: number;
  log?: (line: string) => void;
  signal?: AbortSignal;
}

async function waitForModel(outputDir: string, signal?: AbortSignal): Promise<RunModel> {
  for (;;) {
    signal?.throwIfAborted();
    const model = await readRunModel({ outputDir }).catch(() => null);
    if (model) return model;
    await sleep(50);
  }
}

/**
 * The loopback stand-in for prime-rl's trainer: waits for `<outputDir>/model.json` (written by
 * the orchestrator), initialises the embedded policy, broadcasts it as `broadcasts/step_0/` +
 * `STABLE`, then for N = 1, 2, …: reads `rollouts/step_N/rank_<r>.bin` for every rank (or the
 * ZMQ frames), trains one tfjs step on the unpacked samples with the run's lr and reference-KL
 * schedules, and broadcasts `broadcasts/step_N/` + `STABLE`. When the orchestrator starts a new
 * run (a new `runId` in `model.json`) it starts over. Returns after the run's last step (unless
 * `forever`), or throws when aborted.
 */
export async function serveTrainer(options: ServeTrainerOptions): Promise<void> {
  const log = options.log ?? (() => {});
  let served: string | null = null;
  for (;;) {
    options.signal?.throwIfAborted();
    let model = await waitForModel(options.outputDir, options.signal);
    while (model.runId === served) {
      await sleep(100);
      model = await waitForModel(options.outputDir, options.signal);
    }
    served = model.runId;
    const session = new AbortController();
    const onAbort = () => session.abort(options.signal?.reason);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const watch = setInterval(() => {
      readRunModel({ outputDir: options.outputDir })
        .then((now) => {
          if (now && now.runId !== model.runId) session.abort(new TrainerError('a new run started'));
        })
        .catch(() => {});
    }, 250);
    try {
      const finished = await trainRun({ ...options, log }, model, session.signal);
      if (finished && !options.forever) return;
    } catch (error) {
      if (!session.signal.aborted || options.signal?.aborted) throw error;
      log(`serve-trainer: run ${model.runId} replaced by a new run; starting over`);
    } finally {
      clearInterval(watch);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }
}

async function trainRun(
  options: ServeTrainerOptions & { log: (line: string) => void },
  model: RunModel,
  signal: AbortSignal,
): Promise<boolean> {
  const { outputDir, log } = options;
  const policy = PolicyConfigSchema.parse(model.policy);
  const schedule = model.schedule as unknown as TrainerSchedule;
  const trainerConfig = model.trainer as TrainerConfigInput;
  const weights = initWeights(policy);
  const init = { policy, weights, trainer: trainerConfig };
  let handle: TrainerHandle;
  if (options.workerThread ?? true) {
    try {
      handle = await workerTrainer(init);
    } catch {
      handle = await localTrainer(init);
    }
  } else handle = await localTrainer(init);
  const worldSize = options.dataWorldSize ?? 1;
  const receivers = options.zmq
    ? await Promise.all(
        Array.from({ length: worldSize }, (_, rank) =>
          ZmqRolloutReceiver.open({ host: options.zmq!.host, port: options.zmq!.port, rank }),
        ),
      )
    : null;
  const closeReceivers = () => Promise.all((receivers ?? []).map((r) => r.close()));
  signal.addEventListener('abort', () => void closeReceivers(), { once: true });
  const run = { tokenizer: model.tokenizer, policy };
  const betas = (trainerConfig.betas as number[] | undefined) ?? [0.9, 0.999];
  try {
    await writeBroadcast({
      outputDir,
      step: 0,
      weights,
      optimizer: await handle.optimizerState(),
      state: { runId: model.runId, run },
    });
    log(`serve-trainer: run ${model.runId}: ${handle.backend}; broadcast step 0; reading ${receivers ? 'zmq' : 'rollout files'}`);
    const lastStep = options.maxSteps ?? schedule.maxSteps;
    for (let step = 1; step <= lastStep; step++) {
      const perRank: WireMicroBatch[][] = [];
      for (let rank = 0; rank < worldSize; rank++) {
        perRank.push(
          receivers
            ? await receivers[rank]!.receive()
            : await readRollouts({ outputDir, step, rank, timeoutMs: Number.POSITIVE_INFINITY, pollMs: 10, signal }),
        );
      }
      signal.throwIfAborted();
      const counts = new Set(perRank.map((r) => r.length));
      if (counts.size > 1)
        throw new WireError(`step ${step}: ranks hold different numbers of micro batches`, { path: 'rollouts' });
      const samples: UnpackedSample[] = perRank.flatMap((rank) => unpackMicroBatches(rank));
      const stepOptions = scheduledStepOptions(schedule, step - 1);
      let metrics: Record<string, number> = {};
      let next = await handle.weights();
      if (samples.length > 0) {
        const result = await handle.train(samples, stepOptions);
        next = result.weights;
        metrics = trainerStepMetrics(result.metrics, stepOptions, betas);
      }
      signal.throwIfAborted();
      await writeBroadcast({
        outputDir,
        step,
        weights: next,
        optimizer: await handle.optimizerState(),
        state: { runId: model.runId, run, metrics },
      });
      await pruneBroadcasts({ outputDir, keepFrom: step - (options.keepBroadcasts ?? 4) });
      if (step % 25 === 0) log(`serve-trainer: step ${step} (${samples.length} samples)`);
    }
    return true;
  } finally {
    await handle.close();
    if (!signal.aborted) await closeReceivers();
  }
}
