import * as tf from '@tensorflow/tfjs';

let chosen: Promise<string> | null = null;

/**
 * Selects the fastest tfjs backend that loads here: `@tensorflow/tfjs-node-gpu`, then
 * `@tensorflow/tfjs-node` (optional, imported only when resolvable), else the wasm backend.
 * Returns the backend name; call once before building models.
 */
export function initTfBackend(options: { prefer?: 'auto' | 'wasm' | 'cpu' } = {}): Promise<string> {
  chosen ??= (async () => {
    const prefer = options.prefer ?? 'auto';
    if (prefer === 'auto') {
      for (const pkg of ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node']) {
        try {
          await import(/* @vite-ignore */ pkg);
          const name = pkg.endsWith('gpu') ? 'tensorflow' : 'tensorflow';
          if (await tf.setBackend(name)) {
            await tf.ready();
            return `${name} (${pkg})`;
          }
        } catch {
          // not installed or does not load here: try the next one
        }
      }
    }
    if (prefer !== 'cpu') {
      await import('@tensorflow/tfjs-backend-wasm');
      if (await tf.setBackend('wasm')) {
        await tf.ready();
        return 'wasm';
      }
    }
    await tf.setBackend('cpu');
    await tf.ready();
    return 'cpu';
  })();
  return chosen;
}
