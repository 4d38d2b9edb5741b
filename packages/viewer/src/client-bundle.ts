import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { EngineError } from '@troupe/verifiers';

/**
 * The page's front end is TypeScript under `client/` (entry `client/main.ts`), bundled by esbuild
 * into one IIFE that is inlined into every page. `pnpm build` writes the bundle to
 * `dist/client/app.js`; from sources (tests, tsx, the `@troupe/source` condition) it is
 * bundled on first use instead, so the dev loop needs no build.
 */

/** The client's entry module: beside this file in `src/`, or in the package's shipped `src/` from `dist/`. */
export function clientEntry(): string {
  for (const candidate of ['./client/main.ts', '../src/client/main.ts']) {
    const path = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new EngineError('troupe view: the viewer client sources (src/client/main.ts) are missing');
}

/** Bundles the client into one browser script (an IIFE with no imports). Needs esbuild (a devDependency). */
export function bundleClient(): string {
  const require = createRequire(import.meta.url);
  let esbuild: typeof import('esbuild');
  try {
    esbuild = require('esbuild') as typeof import('esbuild');
  } catch (error) {
    throw new EngineError(
      'troupe view: the built viewer client (dist/client/app.js) is missing and esbuild is not installed to bundle it from sources; run `pnpm build`',
      { cause: error },
    );
  }
  const result = esbuild.buildSync({
    entryPoints: [clientEntry()],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    charset: 'utf8',
    write: false,
    logLevel: 'silent',
  });
  const script = result.outputFiles[0]?.text ?? '';
  // The script is inlined in a <script> element: it must not be able to end it.
  if (/<\/script/i.test(script))
    throw new EngineError('troupe view: the bundled client contains "</script"', { engine: 'esbuild' });
  return script;
}
