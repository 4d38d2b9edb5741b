import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's chromium, installed by tooling/scripts/ci-chromium.sh. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** The flags every viewer test and benchmark starts Chromium with. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Why the browser tests cannot run on the current host (no /usr/bin/chromium), or null when they can. */
export function chromiumMissing(): string | null {
  return existsSync(CHROMIUM_PATH)
    ? null
    : `${CHROMIUM_PATH} is missing: run tooling/scripts/ci-chromium.sh (apt-get install chromium) to run the browser tests`;
}

/**
 * Starts headless Chromium with a fresh user-data-dir (removed on close), for tests and
 * benchmarks of the viewer. Test support only; never used by the CLI.
 */
export async function launchChromium(
  options: { width?: number; height?: number } = {},
): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'troupe-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: options.width ?? 1440, height: options.height ?? 900 },
    deviceScaleFactor: 1,
  });
  return {
    context,
    close: async () => {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}
