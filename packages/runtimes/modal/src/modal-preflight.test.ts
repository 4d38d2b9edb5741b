import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModalDouble } from './__fixtures__/modal-double.ts';
import { createRuntime } from './index.ts';

/**
 * Preflight against the loopback Modal API (`__fixtures__/modal-double.ts`, gRPC with the SDK's own
 * codecs, which refuses a token pair it did not issue with UNAUTHENTICATED as Modal does). The
 * preflight makes control-plane calls only, so no container engine is needed and nothing skips.
 */
const tokenId = 'ak-preflight-token-id';
const tokenSecret = 'as-preflight-token-secret';
const double = new ModalDouble({ docker: new Docker({ socketPath: '/nonexistent/docker.sock' }), tokenId, tokenSecret });

// The SDK finds its control plane in its profile (`MODAL_SERVER_URL`, read by `new ModalClient`).
beforeAll(async () => {
  await double.start();
  process.env.MODAL_SERVER_URL = double.url;
});
afterAll(() => double.stop());

const fromEnv = (env: Record<string, string>) => createRuntime({ appName: 'troupe-preflight' }, { env });

describe('modal preflight against the loopback Modal API: the token pair in its variables, accepted', () => {
  it('passes with the token the API issued, by looking the app up (a missing app is fine) without creating it', async () => {
    await expect(fromEnv({ MODAL_TOKEN_ID: tokenId, MODAL_TOKEN_SECRET: tokenSecret }).preflight()).resolves.toBeUndefined();
    const lookup = double.calls.filter((call) => call.method === 'appGetOrCreate').at(-1);
    expect(lookup?.request).toMatchObject({ appName: 'troupe-preflight' });
    expect((lookup?.request as { objectCreationType?: number } | undefined)?.objectCreationType ?? 0).not.toBe(1);
  });

  it('a token the API refuses (UNAUTHENTICATED) fails naming MODAL_TOKEN_ID / MODAL_TOKEN_SECRET, never the secret', async () => {
    const error = (await fromEnv({ MODAL_TOKEN_ID: tokenId, MODAL_TOKEN_SECRET: 'as-wrong-secret' })
      .preflight()
      .catch((caught: unknown) => caught)) as Error;
    expect(error).toMatchObject({ name: 'SandboxError' });
    expect(error.message).toContain('refused the token in MODAL_TOKEN_ID / MODAL_TOKEN_SECRET');
    expect(error.message).not.toContain('as-wrong-secret');
  });

  it('a missing token variable fails when the runtime is built, naming the variable', () => {
    expect(() => fromEnv({ MODAL_TOKEN_ID: tokenId })).toThrow(/MODAL_TOKEN_SECRET/);
    expect(() => fromEnv({ MODAL_TOKEN_SECRET: tokenSecret })).toThrow(/MODAL_TOKEN_ID/);
  });
});
