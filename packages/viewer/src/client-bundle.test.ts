import { describe, expect, it } from 'vitest';
import { clientAssets } from './client-assets.ts';
import { bundleClient, clientEntry } from './client-bundle.ts';

describe('the viewer client bundle', () => {
  it('bundles the TypeScript modules under client/ into one script with no imports', () => {
    expect(clientEntry()).toMatch(/viewer[\\/]src[\\/]client[\\/]main\.ts$/);
    const script = bundleClient();
    expect(script.startsWith('"use strict";(()=>{')).toBe(true);
    expect(script).not.toMatch(/^\s*import[\s{]/m);
    expect(script).not.toMatch(/<\/script/i);
    // The modules' code is in it: the virtual list, the run page's routing, the token view.
    expect(script).toContain('troupe:ready');
    expect(script).toContain('ResizeObserver');
    expect(script).toContain('tok-grid');
  });

  it('is what the page inlines when run from sources (no built client/app.js beside them)', () => {
    expect(clientAssets().script).toBe(bundleClient());
    expect(clientAssets().styles).toContain('.trace-column');
  });
});
