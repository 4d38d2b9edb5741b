import { runRecordedHarnessConformance } from '@troupe/verifiers/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineProgramHarness,
  installScript,
  npmPackage,
  REAL_CLI_VERIFICATION,
  RECORDED_ONLY_VERIFICATION,
} from './program-harness.ts';

const Demo = defineProgramHarness({
  id: 'demo_agent',
  defaultVersion: '1.2.3',
  options: { level: z.number().int().optional(), transport: z.enum(['chat', 'messages']).optional() },
  dialect: (options) => options.transport ?? 'chat',
  program: (version) => `demo ${version} (vendor)`,
  install: installScript((version) => `install-demo --version ${version}`),
  launch: ({ launch, scratch, options, version }) => ({
    argv: ['demo', '--level', String(options.level ?? 0), '--v', version, '--model', launch.endpoint.model],
    env: { HOME: `${scratch}/home`, DEMO_KEY: launch.endpoint.secret },
    files: [{ path: `${scratch}/demo.toml`, content: `level = ${options.level ?? 0}\n` }],
    pathDirs: ['/opt/demo/bin'],
  }),
  mapResult: (mapped, result) => (result.stdout.includes('recorded') ? { ...mapped, exitCode: 7 } : mapped),
});

const NpmDemo = defineProgramHarness({
  id: 'npm_demo',
  defaultVersion: '0.1.0',
  dialect: 'responses',
  program: (version) => `npm-demo ${version}`,
  install: npmPackage({ packageName: '@demo/cli', bin: 'demo', node: 'none' }),
  capabilities: { supportsMcp: true },
  launch: ({ install }) => ({ argv: [install.binPath], env: {}, files: [] }),
});

describe('defineProgramHarness', () => {
  it('makes the id, version, info and capabilities from the spec', () => {
    expect(Demo.id).toBe('demo_agent');
    expect(Demo.defaultVersion).toBe('1.2.3');
    const harness = new Demo({ transport: 'messages', version: '2.0.0' });
    expect(harness.id).toBe('demo_agent');
    expect(harness.info).toEqual({
      id: 'demo_agent',
      program: 'demo 2.0.0 (vendor)',
      version: '2.0.0',
      dialect: 'messages',
      testedForReal: false,
      verification: RECORDED_ONLY_VERIFICATION,
    });
    expect(harness.capabilities).toMatchObject({ executesCode: true, needsContainer: true, supportsMcp: false });
  });

  it('validates untyped options with the common fields, version and its own; errors name the harness and field', () => {
    expect(Demo.createHarness({ level: 2, timeoutMs: 5, env: { A: 'b' }, version: '9' }).info.version).toBe('9');
    expect(() => Demo.createHarness({ level: 'high' })).toThrow(/harness demo_agent: options\.level/);
    expect(() => Demo.createHarness({ allowLocal: true })).toThrow(/harness demo_agent: options/);
    expect(() => NpmDemo.createHarness({ allowLocal: 'yes' })).toThrow(/harness npm_demo: options\.allowLocal/);
  });

  it('an npm program is verified for real and needs a container unless allowLocal', () => {
    expect(NpmDemo.installer.packageName).toBe('@demo/cli');
    const contained = NpmDemo.createHarness();
    expect(contained.capabilities).toMatchObject({ needsContainer: true, supportsMcp: true });
    expect(contained.info).toMatchObject({ program: 'npm-demo 0.1.0', testedForReal: true, verification: REAL_CLI_VERIFICATION });
    expect(NpmDemo.createHarness({ allowLocal: true }).capabilities.needsContainer).toBe(false);
  });

  it('installs the chosen version under its marker, launches the plan with the tool root first on PATH, and maps the result', async () => {
    const { sandbox, result } = await runRecordedHarnessConformance({
      harness: Demo.createHarness({ level: 4, version: '3.1.4', extraArgs: ['--extra'] }),
      expect: { install: ['install-demo --version 3.1.4'], launch: ['demo', '--level', '4', '--v', '3.1.4', '--extra'] },
    });
    expect(sandbox.commandLines.some((line) => line.includes('.installed-demo_agent-3.1.4'))).toBe(true);
    expect(sandbox.commandLines.some((line) => line.includes('/var/tmp/troupe/tools/bin:/opt/demo/bin'))).toBe(true);
    expect([...sandbox.files.values()]).toContain('level = 4\n');
    // The recording sandbox answers the launch with exit 3 and `recorded stdout`; the spec's mapResult reads it.
    expect(result.exitCode).toBe(7);
  });

  it('the class is one prototype: instances from new and createHarness share it', () => {
    expect(Demo.createHarness()).toBeInstanceOf(Demo);
    expect(new Demo()).toBeInstanceOf(Demo);
  });
});
