// `pnpm build` step: writes the bundled viewer client and its CSS to dist/client/, so an
// installed @troupe/viewer serves the viewer without esbuild.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleClient } from './client-bundle.ts';

const out = fileURLToPath(new URL('../dist/client/', import.meta.url));
mkdirSync(out, { recursive: true });
writeFileSync(`${out}app.js`, bundleClient());
copyFileSync(fileURLToPath(new URL('./client/styles.css', import.meta.url)), `${out}styles.css`);
process.stdout.write(`viewer client: ${out}app.js\n`);
