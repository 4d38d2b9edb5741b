import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRuntime, setPluginEnvironment } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { createRuntime, KubernetesRuntime } from './index.ts';

const kubeconfig = (server: string) => `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "${server}" } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: x, context: { cluster: c, user: u, namespace: ns } }]
current-context: x
`;

describe('createRuntime (kubernetes)', () => {
  it('builds a runtime from the kubeconfig named in the options', () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-kube-'));
    writeFileSync(join(dir, 'config'), kubeconfig('https://127.0.0.1:1'));
    const runtime = createRuntime({ kubeconfig: join(dir, 'config'), namespace: 'eval' });
    expect(runtime).toBeInstanceOf(KubernetesRuntime);
    expect(runtime.id).toBe('kubernetes');
  });

  it('reads KUBECONFIG only from the environment it is given', () => {
    expect(() => createRuntime({}, { env: { KUBECONFIG: '/nonexistent/kubeconfig' } })).toThrow(/\/nonexistent\/kubeconfig/);
  });

  it('is what runtime = "kubernetes" resolves to', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-kube-'));
    writeFileSync(join(dir, 'config'), kubeconfig('https://127.0.0.1:1'));
    setPluginEnvironment({ KUBECONFIG: join(dir, 'config') });
    try {
      const runtime = await loadRuntime('kubernetes');
      expect(runtime.id).toBe('kubernetes');
    } finally {
      setPluginEnvironment({});
    }
  });

  it('names a bad option type', () => {
    expect(() => createRuntime({ kubeconfig: 3 })).toThrow(/kubeconfig: expected a file path/);
  });

  it('refuses a namespace Kubernetes would refuse, naming the field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-kube-'));
    writeFileSync(join(dir, 'config'), kubeconfig('https://127.0.0.1:1'));
    for (const namespace of ['Eval', 'eval_runs', '-eval', 'eval-', 'e'.repeat(64), ''])
      expect(() => createRuntime({ kubeconfig: join(dir, 'config'), namespace }), namespace).toThrow(
        /^kubernetes\.namespace: expected a DNS-1123 label/,
      );
    for (const namespace of ['eval', 'troupe-eval-2', 'e'.repeat(63), '0'])
      expect(createRuntime({ kubeconfig: join(dir, 'config'), namespace }).id).toBe('kubernetes');
  });
});
