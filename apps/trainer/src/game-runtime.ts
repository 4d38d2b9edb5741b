import { randomUUID } from 'node:crypto';
import { type Runtime, registerRuntime, type Sandbox, SandboxError } from '@troupe/verifiers';

/**
 * A runtime for seats that never run code (the `null` harness: game players, user
 * simulators): its sandboxes hold nothing and refuse commands and files. Creating one costs
 * no I/O, which matters when a training step plays thousands of hands (the `local` runtime's
 * temporary directories cost ≈30 ms per hand here).
 */
export class GameRuntime implements Runtime {
  readonly id = 'game';
  readonly capabilities = { container: false, networkIsolation: true };

  async createSandbox(): Promise<Sandbox> {
    let alive = true;
    const refuse = (what: string) =>
      Promise.reject(new SandboxError(`the game runtime has no ${what}: its seats never run code`));
    return {
      id: `game-${randomUUID()}`,
      runtime: 'game',
      workdir: '/',
      exec: () => refuse('shell'),
      readFile: () => refuse('files'),
      writeFile: () => refuse('files'),
      upload: () => refuse('files'),
      download: () => refuse('files'),
      alive: async () => alive,
      reachHost: async (url) => url,
      stop: async () => {
        alive = false;
      },
    };
  }
}

/** Registers runtime id `game` (idempotent). */
export function registerGameRuntime(): void {
  registerRuntime('game', () => new GameRuntime());
}
