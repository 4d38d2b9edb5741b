// Consumer check (d): @troupe/prime-rl imports and works with neither tfjs nor onnxruntime
// installed (they are optional peers), so its root export cannot load them; nor can the
// orchestrator, the transport and the testing subpath (a user driving prime-rl's own trainer and
// vLLM needs neither).
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
const orchestrator = await import('@troupe/prime-rl/orchestrator');
if (typeof orchestrator.Orchestrator !== 'function') throw new Error('@troupe/prime-rl/orchestrator: no Orchestrator');
const transport = await import('@troupe/prime-rl/transport');
const testing = await import('@troupe/prime-rl/testing');
if (typeof testing.VllmShapedServer !== 'function') throw new Error('@troupe/prime-rl/testing: no VllmShapedServer');
console.log(
  `(d) ok: @troupe/prime-rl (${Object.keys(primeRl).length} exports), /orchestrator (${Object.keys(orchestrator).length}), /transport (${Object.keys(transport).length}) and /testing (${Object.keys(testing).length}) load with no tfjs or onnxruntime installed`,
);
