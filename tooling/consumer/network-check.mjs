// The consumer test's network, checked before anything is installed: the npm registry answers,
// and nothing else is reachable (onnxruntime-node's install script fetches from api.nuget.org,
// others from GitHub; a raw address must not route either). A check that passed on an open network
// would prove nothing, so an open network fails the test.
const probe = async (url) => {
  try {
    const reply = await fetch(url, { signal: AbortSignal.timeout(15_000) });
    return `HTTP ${reply.status}`;
  } catch (error) {
    return `unreachable (${error.cause?.code ?? error.name})`;
  }
};
const registry = await probe('https://registry.npmjs.org/zod');
if (registry !== 'HTTP 200') throw new Error(`network check: the npm registry is ${registry}`);
for (const url of [
  'https://api.nuget.org/v3/index.json',
  'https://github.com/',
  'https://objects.githubusercontent.com/',
  'http://1.1.1.1/',
  'https://8.8.8.8/',
]) {
  const result = await probe(url);
  if (!result.startsWith('unreachable'))
    throw new Error(`network check: ${url} answered ${result}; only the npm registry may be reachable`);
}
console.log('network: the npm registry only (api.nuget.org, github.com, raw addresses unreachable)');
