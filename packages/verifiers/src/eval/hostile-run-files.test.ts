import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildConfig } from '../cli/eval-args.ts';
import { importUserModule } from '../env/reward-modules.ts';
import { ConfigError } from '../errors/troupe-error.ts';
import { calculatorClient, calculatorEval, plantHostileFile } from '../testing/calculator-run.ts';
import { readConfigFile } from './eval-config.ts';
import { replayRun } from './replay.ts';
import { REJECTED_TRACES_FILE } from './resume-file.ts';
import { readEpisodes } from './traces-file.ts';

const fresh = () => mkdtempSync(join(tmpdir(), 'troupe-hostile-files-'));

const jsonLines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('resume never deletes what it cannot read', () => {
  it('moves a complete line of an unknown schema version to traces.rejected.jsonl with the reason, reports it, and re-runs its episode', async () => {
    const outDir = fresh();
    await calculatorEval(outDir);
    const tracesPath = join(outDir, 'traces.jsonl');
    const [first, ...rest] = readFileSync(tracesPath, 'utf8').split('\n').filter(Boolean);
    const future = (first as string).replace('"version":1', '"version":99');
    writeFileSync(tracesPath, `${[future, ...rest].join('\n')}\n{"version":1,"id":"torn`);
    const logs: string[] = [];
    const second = await calculatorEval(outDir, { resume: true, log: (l) => logs.push(l) });
    expect(second.kept).toBe(3);
    expect(second.ran).toBe(1);
    expect(logs.join('\n')).toMatch(/moving line 1 of traces.jsonl to traces.rejected.jsonl \(version: /);
    const rejected = jsonLines(join(outDir, REJECTED_TRACES_FILE));
    expect(rejected.map((r) => r.line)).toEqual([1, 5]);
    expect(rejected[0]?.text).toBe(future);
    expect(String(rejected[0]?.reason)).toMatch(/^version: /);
    expect(rejected[1]).toMatchObject({ reason: 'torn last line (no newline)', text: '{"version":1,"id":"torn' });
    expect(jsonLines(tracesPath)).toHaveLength(4);
  });

  it('refuses a traces.jsonl that is a FIFO or a symlink, for resume and export, without blocking', async () => {
    for (const kind of ['fifo', 'symlink'] as const) {
      const outDir = fresh();
      const tracesPath = join(outDir, 'traces.jsonl');
      plantHostileFile(tracesPath, kind, join(fresh(), 'secret.jsonl'));
      const message = kind === 'fifo' ? /traces.jsonl: not a regular file \(a FIFO\); refused/ : /traces.jsonl: a symlink/;
      expect(() => readEpisodes(tracesPath)).toThrow(message);
      await expect(calculatorEval(outDir, { resume: true })).rejects.toThrow(message);
    }
  });
});

describe('config files', () => {
  it('refuses a [__proto__] table, and a __proto__ key anywhere, naming it', () => {
    const dir = fresh();
    for (const [name, text, at] of [
      ['a.toml', '[__proto__]\nisAdmin = true\n', '__proto__'],
      ['b.toml', '[env]\nid = "x"\n[env.__proto__]\npolluted = 1\n', 'env.__proto__'],
      ['c.json', '{"env": {"__proto__": {"polluted": 1}}}', 'env.__proto__'],
    ] as const) {
      const path = join(dir, name);
      writeFileSync(path, text);
      let error: unknown;
      try {
        readConfigFile(path);
      } catch (caught) {
        error = caught;
      }
      expect(ConfigError.isInstance(error)).toBe(true);
      expect((error as Error).message).toBe(
        `config ${path}: ${at}: a "__proto__" key is refused (it would set a prototype, not a field)`,
      );
    }
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  });
});

describe('run directories are data, never code', () => {
  /** A reward module that would leave a marker file if it ever ran. */
  const planted = (marker: string) =>
    `data:text/javascript,import('node:fs').then((f)=>f.writeFileSync(${JSON.stringify(marker)},'ran'));export const r=()=>1;`;

  async function runWithPlantedConfig() {
    const outDir = fresh();
    await calculatorEval(outDir);
    const marker = join(outDir, 'marker');
    // As `troupe eval` saves it, with a reward module someone planted.
    const saved = {
      model: 'calc',
      env: { id: 'single-agent', agent: { harness: 'null', rewards: [{ module: planted(marker), export: 'r' }] } },
    };
    writeFileSync(join(outDir, 'config.json'), JSON.stringify(saved));
    return { outDir, marker };
  }

  it("replay refuses a module named by the run's config.json, naming it, and never imports it", async () => {
    const { outDir, marker } = await runWithPlantedConfig();
    await expect(replayRun({ sourceDir: outDir, client: calculatorClient(), model: 'calc' })).rejects.toThrow(
      /replay .*: the run's config.json names module "data:text\/javascript,.*" \(env.agent.rewards.0.module\); a run directory is data .* pass that config again with --config/,
    );
    expect(existsSync(marker)).toBe(false);
  });

  it('eval --resume refuses the same, and accepts the module when --config names it again', async () => {
    const { outDir, marker } = await runWithPlantedConfig();
    expect(() => buildConfig(['--resume', outDir])).toThrow(
      /--resume .*: the run's config.json names module "data:text\/javascript/,
    );
    const again = join(fresh(), 'again.json');
    writeFileSync(again, readFileSync(join(outDir, 'config.json')));
    // Named now by the user: past this check (the URL itself is then refused where modules load).
    expect(() => buildConfig(['--resume', outDir, '--config', again])).not.toThrow(/a run directory is data/);
    await expect(importUserModule(planted(marker), outDir)).rejects.toThrow(
      /a URL is refused; name a file path or an installed package/,
    );
    await expect(importUserModule('https://example.com/reward.mjs', outDir)).rejects.toThrow(/a URL is refused/);
    expect(existsSync(marker)).toBe(false);
  });
});
