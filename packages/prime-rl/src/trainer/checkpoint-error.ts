import { TroupeError } from '@troupe/verifiers';

/**
 * A checkpoint that cannot be trusted: a file missing, truncated, or not matching its manifest
 * checksum, a `meta.json` that is not a troupe checkpoint, a pointer troupe did not create, or no
 * checkpoint where a resume needs one. `path` names the file (or directory) at fault.
 */
export class CheckpointError extends TroupeError {
  /** The file or directory at fault. */
  readonly path: string;
  constructor(options: { path: string; message: string; cause?: unknown }) {
    super({ name: 'CheckpointError', message: options.message, cause: options.cause });
    this.path = options.path;
  }

  /** True when `value` is a `CheckpointError`, from this copy of the package or another. */
  static override isInstance(value: unknown): value is CheckpointError {
    return TroupeError.isKind(value, 'CheckpointError');
  }
}
