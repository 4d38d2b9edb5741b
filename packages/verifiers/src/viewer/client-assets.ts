import { readFileSync } from 'node:fs';

/**
 * The page's front end: plain browser JavaScript and CSS kept beside this file and inlined into
 * every page (no bundler, no CDN, no network). Read once per process.
 */
let cached: { script: string; styles: string } | undefined;

export function clientAssets(): { script: string; styles: string } {
  cached ??= {
    script: readFileSync(new URL('./client/app.js', import.meta.url), 'utf8'),
    styles: readFileSync(new URL('./client/styles.css', import.meta.url), 'utf8'),
  };
  return cached;
}
