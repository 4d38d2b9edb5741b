// Consumer check (i): writes public-types.ts, which imports every entry point (`exports` key) of
// every installed @troupe package, for tsc -p tsconfig.trainer.json (strict, skipLibCheck false,
// lib ES2022, no DOM). Prints the entry points it covers.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const scope = join(process.cwd(), 'node_modules/@troupe');
const entries = [];
for (const name of readdirSync(scope).sort()) {
  const pkg = JSON.parse(readFileSync(join(scope, name, 'package.json'), 'utf8'));
  if (!pkg.exports) throw new Error(`@troupe/${name} has no exports map`);
  const keys = typeof pkg.exports === 'string' ? ['.'] : Object.keys(pkg.exports);
  for (const key of keys.filter((k) => !k.endsWith('.json'))) {
    entries.push(key === '.' ? pkg.name : `${pkg.name}${key.slice(1)}`);
  }
}
const lines = entries.map((entry, i) => `import * as m${i} from ${JSON.stringify(entry)};\nexport { m${i} };`);
writeFileSync('public-types.ts', `// Written by public-types.mjs.\n${lines.join('\n')}\n`);
console.log(`(i) ${entries.length} entry points: ${entries.join(' ')}`);
