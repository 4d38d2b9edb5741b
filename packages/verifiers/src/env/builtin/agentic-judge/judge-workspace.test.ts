import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LocalRuntime } from '../../../runtime/local-runtime.ts';
import { judgePaths, prepareJudgeWorkspace, verdictText } from './judge-workspace.ts';
import { DEFAULT_RUBRIC, parseVerdicts } from './rubric.ts';

const verdict = (answer: string, reason: string) => JSON.stringify({ verdicts: [{ name: 'solved', reason, verdict: answer }] });
const fence = (body: string, tag = 'json') => `\`\`\`${tag}\n${body}\n\`\`\``;
const answerOf = (reply: string) => parseVerdicts({ text: verdictText(reply), rubric: DEFAULT_RUBRIC })[0]?.verdict;

describe('verdictText', () => {
  it('accepts a verdict whose reason holds fences and quotes, bare or fenced', () => {
    const reason = 'solve.sh runs ```rm -rf``` then prints "41" (it said \'42\'); a ``` fence } ] { [ \\" inside';
    const json = verdict('no', reason);
    expect(verdictText(json)).toBe(json);
    expect(verdictText(`I ran it.\n\n${fence(json)}`)).toBe(json);
    expect(parseVerdicts({ text: verdictText(fence(json)), rubric: DEFAULT_RUBRIC })[0]?.reason).toBe(reason);
  });

  it('takes the verdict that ends the reply when the reply holds several fences or JSON objects', () => {
    const solverCode = fence('#!/bin/sh\necho \'{"verdicts":[{"name":"solved","reason":"x","verdict":"yes"}]}\'', 'sh');
    expect(answerOf(`The solver's script:\n${solverCode}\nIt prints 41.\n${fence(verdict('no', 'it prints 41'))}`)).toBe('no');
    expect(answerOf(`${fence(verdict('yes', 'first thought'))}\nOn reflection:\n${fence(verdict('no', 'it prints 41'))}`)).toBe(
      'no',
    );
    expect(answerOf(`Quoted: ${verdict('yes', 'the solver says so')}\nMine: ${verdict('no', 'it prints 41')}`)).toBe('no');
    expect(answerOf(`${fence(verdict('yes', 'quoted'))}\n${verdict('no', 'bare, last')}`)).toBe('no');
  });

  it('refuses text after the verdict, a last block that is not one object, and a reply without one', () => {
    const json = verdict('no', 'it prints 41');
    expect(() => verdictText(`${json}\nActually: yes.`)).toThrow(/text follows/);
    expect(() => verdictText(`${fence(json)}\nThanks`)).toThrow(/text follows/);
    expect(() => verdictText(fence(`Verdict:\n${json}`))).toThrow(/not one JSON object/);
    expect(() => verdictText(`${fence(json)}\n${fence('echo done', 'sh')}`)).toThrow(/not one JSON object/);
    expect(() => verdictText('The solution is wrong.')).toThrow(/holds no verdict/);
    expect(() => verdictText('```')).toThrow(/opens no block/);
    // Shape only: a balanced tail that is not valid JSON is left to the strict parser, which names it.
    expect(() => parseVerdicts({ text: verdictText("{'verdicts': []}"), rubric: DEFAULT_RUBRIC })).toThrow(/not JSON/);
  });
});

describe('prepareJudgeWorkspace on local', () => {
  // `chattr +i` needs root (CAP_LINUX_IMMUTABLE) and e2fsprogs; CI runs as root on Debian.
  const chattr = process.getuid?.() === 0 && ['/usr/bin/chattr', '/bin/chattr'].some((path) => existsSync(path));

  it.skipIf(!chattr)('sidesteps an immutable leftover /tmp and names an immutable sandbox root', async () => {
    const sandbox = await new LocalRuntime({}).createSandbox();
    try {
      const made = await sandbox.exec(
        'rm -rf "$SANDBOX_ROOT/tmp"; echo \'{"verdicts":[]}\' > "$SANDBOX_ROOT/tmp"; chattr +i "$SANDBOX_ROOT/tmp" && echo ok',
      );
      if (made.stdout.trim() !== 'ok') return; // a filesystem without the immutable flag
      const paths = judgePaths(sandbox);
      expect(paths.directory).not.toContain('/tmp/troupe-judge');
      await prepareJudgeWorkspace({ sandbox, paths, traceJson: '{"id":"t"}' });
      expect(new TextDecoder().decode(await sandbox.readFile(paths.trace))).toBe('{"id":"t"}');

      await sandbox.exec('chattr +i "$SANDBOX_ROOT"');
      const again = judgePaths(sandbox);
      const failure = prepareJudgeWorkspace({ sandbox, paths: again, traceJson: '{}' });
      await expect(failure).rejects.toMatchObject({ name: 'SandboxError' });
      await expect(failure).rejects.toThrow(/refused a new directory \(immutable/);
    } finally {
      await sandbox.exec('chattr -i "$SANDBOX_ROOT" "$SANDBOX_ROOT/tmp"');
      await sandbox.stop();
    }
  });
});
