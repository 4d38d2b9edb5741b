import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's chromium, installed by tooling/scripts/ci-chromium.sh. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Why the browser tests cannot run here (no /usr/bin/chromium), or null when they can. */
export function chromiumMissing(): string | null {
  return existsSync(CHROMIUM_PATH)
    ? null
    : `${CHROMIUM_PATH} is missing: run tooling/scripts/ci-chromium.sh (apt-get install chromium) to run the browser tests`;
}

/** Headless Chromium with a fresh user-data-dir (removed on close). Test support only. */
export async function launchChromium(
  options: { width?: number; height?: number } = {},
): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'troupe-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
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
