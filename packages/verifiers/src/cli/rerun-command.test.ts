import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { troupe } from '../../test/support/troupe-process.ts';
import { legalActionServer } from '../testing/game-seats.ts';
import type { ScriptedModelServer } from '../testing/scripted-model-server.ts';

describe('troupe rerun --swap (counterfactual seat replay)', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    // "passive" plays the first legal action the prompt names, "aggressive" the last.
    server = await legalActionServer({ playsLast: ['aggressive'] });
  });
  afterAll(() => server.close());

  it('refuses a role the run does not have, naming its roles, and a malformed --swap', async () => {
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-rerun-bad-'));
    const source = join(outputs, 'source');
    expect(
      (await troupe(['eval', '-n', '1', '--harness', 'null', '-m', 'm', '-b', server.baseUrl, '--run-dir', source])).code,
    ).toBe(0);
    const unknown = await troupe(['rerun', source, '--swap', 'judge=x']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no role "judge" \(its roles: agent\)/);
    const malformed = await troupe(['rerun', source, '--swap', 'agent']);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/--swap: expected ROLE=MODEL/);
    const help = await troupe(['rerun', '--help']);
    expect(help.stdout).toMatch(/--swap ROLE=MODEL/);
    expect(readdirSync(outputs)).toEqual(['source']);
  }, 60_000);

  it("refuses a module named by the run's config.json unless --config names it again, and never imports it", async () => {
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-rerun-planted-'));
    const source = join(outputs, 'source');
    expect(
      (await troupe(['eval', '-n', '1', '--harness', 'null', '-m', 'm', '-b', server.baseUrl, '--run-dir', source])).code,
    ).toBe(0);
    // Someone rewrites the run's config.json to name a reward module that would leave a marker.
    const marker = join(outputs, 'ran');
    const module = `data:text/javascript,import('node:fs').then((f)=>f.writeFileSync(${JSON.stringify(marker)},'ran'));export const r=()=>1;`;
    const configPath = join(source, 'config.json');
    const config = JSON.parse(readFileSync(configPath, 'utf8'));
    config.env = { ...config.env, agent: { ...config.env?.agent, rewards: [{ module, export: 'r' }] } };
    writeFileSync(configPath, JSON.stringify(config));
    const refused = await troupe(['rerun', source, '--swap', 'agent=other']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /troupe rerun .*: the run's config.json names module "data:text\/javascript,.*" \(env.agent.rewards.0.module\); a run directory is data/,
    );
    expect(existsSync(marker)).toBe(false);
    expect(readdirSync(outputs)).toEqual(['source']);
  }, 60_000);
});
