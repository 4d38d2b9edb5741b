// Consumer check (d): @troupe/prime-rl imports and works with neither tfjs nor onnxruntime
// installed (they are optional peers), so its root export cannot load them.
import { createRequire } from 'node:module';

const primeRl = await import('@troupe/prime-rl');
const algorithm = primeRl.createAlgorithm({ type: 'grpo' });
if (typeof algorithm.assign !== 'function' && typeof algorithm !== 'object') throw new Error('no algorithm');
const require = createRequire(import.meta.url);
for (const engine of ['@tensorflow/tfjs', '@tensorflow/tfjs-backend-wasm', 'onnxruntime-node']) {
  let installed = true;
  try {
    require.resolve(engine);
  } catch {
    installed = false;
  }
  if (installed) throw new Error(`${engine} was installed: it must stay an optional peer`);
}
console.log(`(d) ok: @troupe/prime-rl (${Object.keys(primeRl).length} exports) runs with no tfjs or onnxruntime installed`);
