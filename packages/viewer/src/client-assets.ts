import { existsSync, readFileSync } from 'node:fs';
import { bundleClient } from './client-bundle.ts';

/**
 * The page's front end: the bundled client script and its CSS, inlined into every page (no CDN,
 * no network). The script is `client/app.js` when built (`dist/`), else bundled from the
 * TypeScript sources on first use (see client-bundle.ts). Read once per process.
 */
let cached: { script: string; styles: string } | undefined;

export function clientAssets(): { script: string; styles: string } {
  if (cached) return cached;
  const built = new URL('./client/app.js', import.meta.url);
  cached = {
    script: existsSync(built) ? readFileSync(built, 'utf8') : bundleClient(),
    styles: readFileSync(new URL('./client/styles.css', import.meta.url), 'utf8'),
  };
  return cached;
}
