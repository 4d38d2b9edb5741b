import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ResumeStepMismatchError } from '../errors/resume-step-mismatch-error.ts';
import { stableBroadcastSteps } from './filesystem.ts';

export { ResumeStepMismatchError } from '../errors/resume-step-mismatch-error.ts';

/** `step_<N>` names in `dir`, ascending (prime-rl's `get_all_ckpt_steps`, `utils/pathing.py:117-120` at 559b447). */
async function stepNames(dir: string): Promise<number[]> {
  const names = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [] as string[];
    throw error;
  });
  return names
    .map((name) => /^step_(\d+)$/.exec(name)?.[1])
    .filter((step): step is string => step !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/**
 * The steps prime-rl's trainer holds a checkpoint of: `<checkpointDir>/checkpoints/step_<N>/trainer`
 * (`trainer/ckpt.py:163-165`, `utils/pathing.py:97-98` at 559b447; `checkpointDir` is the trainer's
 * `ckpt.output_dir`, else its `output_dir`). Ascending.
 */
export async function trainerCheckpointSteps(options: { checkpointDir: string }): Promise<number[]> {
  const root = join(options.checkpointDir, 'checkpoints');
  const steps: number[] = [];
  for (const step of await stepNames(root)) {
    const trainer = await lstat(join(root, `step_${step}`, 'trainer')).catch(() => null);
    if (trainer?.isDirectory()) steps.push(step);
  }
  return steps;
}

/**
 * Checks, before an external-engine run resumes from the orchestrator's checkpoint of `step`, that
 * prime-rl's trainer can be at the same step, and clears what of the wire is the orchestrator's:
 *
 * - the trainer must hold a checkpoint of `step` (it is then started with `--resume.step <step>`);
 *   none is a {@link ResumeStepMismatchError} naming its latest;
 * - no broadcast past `step` may be on disk: the trainer writes `broadcasts/step_<T>` at start-up
 *   when it resumed from T (`trainer/rl/train.py:271-277`), so one past `step` is a trainer at
 *   another step, or files from before the crash that prime-rl's launcher clears on resume
 *   (`clean_future_steps`, `utils/pathing.py:196-214`, called at `entrypoints/rl.py:640-651`):
 *   refused either way, naming it;
 * - `rollouts/step_<N>` past `step` are removed (the orchestrator writes them again).
 *
 * Returns the trainer's checkpoint steps.
 */
export async function checkExternalResume(options: {
  outputDir: string;
  /** The trainer's checkpoint root (`ckpt.output_dir`; default `outputDir`). */
  checkpointDir?: string;
  step: number;
}): Promise<{ trainerSteps: number[] }> {
  const { outputDir, step } = options;
  const checkpointDir = options.checkpointDir ?? outputDir;
  const trainerSteps = await trainerCheckpointSteps({ checkpointDir });
  const where = join(checkpointDir, 'checkpoints');
  if (!trainerSteps.includes(step)) {
    const latest = trainerSteps.at(-1) ?? null;
    throw new ResumeStepMismatchError({
      orchestratorStep: step,
      trainerStep: latest,
      found: latest === null ? `no step_<N>/trainer in ${where}` : `latest of ${trainerSteps.join(', ')} in ${where}`,
      hint: `the trainer has no checkpoint of step ${step}, so it cannot resume where the orchestrator does (set the same interval in [ckpt] of trainer.toml as checkpoint_every; troupe train --emit-prime-rl writes it)`,
    });
  }
  const later = (await stableBroadcastSteps({ outputDir })).filter((s) => s > step);
  if (later.length) {
    const trainerStep = later.at(-1) as number;
    throw new ResumeStepMismatchError({
      orchestratorStep: step,
      trainerStep,
      found: `${join(outputDir, 'broadcasts', `step_${trainerStep}`)} is stable`,
      hint: `start the trainer with --resume.step ${step} after clearing broadcasts/ and rollouts/ past step ${step} (launch.sh --resume does both, as prime-rl's launcher does)`,
    });
  }
  for (const stale of (await stepNames(join(outputDir, 'rollouts'))).filter((s) => s > step))
    await rm(join(outputDir, 'rollouts', `step_${stale}`), { recursive: true, force: true });
  return { trainerSteps };
}
