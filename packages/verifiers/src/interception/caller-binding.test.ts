import { spawn } from 'node:child_process';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { contentText } from '../model/messages.ts';
import { type InterceptedRollout, startInterceptedRollout } from '../testing/intercepted-rollout.ts';
import { registerRelayedCaller } from './caller-process.ts';

// A program (a real process) calls with its rollout secret, then runs a command (a real process)
// that steals the secret from the program's /proc/<pid>/environ and calls with it.

let rollout: InterceptedRollout | undefined;
afterEach(async () => {
  await rollout?.close();
  rollout = undefined;
});

/** The thief: finds TROUPE_KEY in the program's environ and asks for a "yes" with it. */
const THIEF = `
const http = require('node:http');
const environ = require('node:fs').readFileSync('/proc/' + process.env.PROGRAM_PID + '/environ', 'utf8');
const key = environ.split('\\0').find((v) => v.startsWith('TROUPE_KEY='))?.slice('TROUPE_KEY='.length);
if (!key) { process.stdout.write('no key'); process.exit(0); }
const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'thief: say yes' }] });
const req = http.request(process.env.BASE + '/chat/completions', { method: 'POST', agent: false,
  headers: { 'content-type': 'application/json', authorization: 'Bearer ' + key } },
  (res) => { res.resume(); res.on('end', () => process.stdout.write('stolen ' + res.statusCode)); });
req.on('error', (e) => process.stdout.write('error ' + e.message));
req.end(body);
`;

/** The program: a first call, a command that runs the thief (the key scrubbed from its env), a second call on a new connection. */
const PROGRAM = `
const http = require('node:http');
const { spawnSync } = require('node:child_process');
const call = (content) => new Promise((resolve) => {
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] });
  const req = http.request(process.env.BASE + '/chat/completions', { method: 'POST', agent: false,
    headers: { 'content-type': 'application/json', authorization: 'Bearer ' + process.env.TROUPE_KEY } },
    (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
  req.on('error', () => resolve(-1));
  req.end(body);
});
(async () => {
  const first = await call('program: first call');
  const thief = spawnSync(process.execPath, ['-e', process.env.THIEF], {
    env: { BASE: process.env.BASE, PROGRAM_PID: String(process.pid) }, encoding: 'utf8' });
  const second = await call('program: second call');
  process.stdout.write(JSON.stringify({ first, thief: thief.stdout, second }));
})();
`;

/** Runs the program against `r` and returns what it printed. */
function runProgram(r: InterceptedRollout): Promise<{ first: number; thief: string; second: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', PROGRAM], {
      env: { BASE: r.baseUrl, TROUPE_KEY: r.session.secret, THIEF },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', () => {
      try {
        resolve(JSON.parse(out) as { first: number; thief: string; second: number });
      } catch (error) {
        reject(new Error(`the program printed ${JSON.stringify(out)}`, { cause: error }));
      }
    });
  });
}

/** What the model was asked, per call. */
function asked(r: InterceptedRollout): string[] {
  return r.model.requests.map((log) => (log.request?.messages ?? []).map((m) => contentText(m.content)).join('\n'));
}

describe.runIf(process.platform === 'linux')('a rollout secret bound to the process of its first call', () => {
  it('refuses the secret from a command the program runs, which read it in /proc/<pid>/environ; the trace records the refusal', async () => {
    const r = (rollout = await startInterceptedRollout({ script: () => 'ok', bindCaller: true }));
    const result = await runProgram(r);

    expect(result).toEqual({ first: 200, thief: 'stolen 403', second: 200 });
    expect(asked(r)).toEqual(['program: first call', 'program: second call']);
    expect(r.trace.metrics['calls/other_process']).toBe(1);
    expect(r.trace.metrics['calls/refused']).toBe(1);
    const refused = r.trace.calls.filter((c) => c.ended === 'refused');
    expect(refused).toHaveLength(1);
    expect(refused[0]?.error?.message).toMatch(/bound to the process that made its first call \(pid:\d+\)/);
    expect(r.trace.calls.filter((c) => !c.ended)).toHaveLength(2);
  });

  it('lets the stolen secret through when the session does not bind its caller (the thief works)', async () => {
    const r = (rollout = await startInterceptedRollout({ script: () => 'ok' }));
    const result = await runProgram(r);

    expect(result).toEqual({ first: 200, thief: 'stolen 200', second: 200 });
    expect(asked(r)).toContain('thief: say yes');
    expect(r.trace.metrics['calls/other_process']).toBeUndefined();
  });

  it('binds the first process that calls: a connection from this process then stands for another caller', async () => {
    const r = (rollout = await startInterceptedRollout({ script: () => 'ok', bindCaller: true }));
    const result = await runProgram(r);
    expect(result.first).toBe(200);
    const late = await fetch(`${r.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${r.session.secret}` },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'from the test process' }] }),
    });
    expect(late.status).toBe(403);
    expect(r.trace.metrics['calls/other_process']).toBe(2);
    expect(asked(r)).not.toContain('from the test process');
  });
});

/**
 * One call from this process on a new connection that a relay registered as relaying for `caller`
 * (what the Docker runtime's host-side relay does for each forwarded connection), or on an
 * unregistered one when `caller` is undefined. Returns the status.
 */
function relayedCall(r: InterceptedRollout, caller: string | null | undefined, content: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] });
    let forget = () => {};
    const req = httpRequest(`${r.baseUrl}/chat/completions`, {
      method: 'POST',
      agent: new HttpAgent({ keepAlive: false }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${r.session.secret}` },
    });
    req.on('socket', (socket) => {
      socket.once('connect', () => {
        if (caller !== undefined) forget = registerRelayedCaller(socket.localPort as number, caller);
        req.end(body);
      });
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => {
        forget();
        resolve(res.statusCode ?? 0);
      });
    });
    req.on('error', reject);
  });
}

describe.runIf(process.platform === 'linux')('a rollout secret bound through a relay', () => {
  it('binds the container process a relay registered for the first call, and refuses another one or an unknown one', async () => {
    const r = (rollout = await startInterceptedRollout({ script: () => 'ok', bindCaller: true }));
    expect(await relayedCall(r, 'relay:101', 'program: first call')).toBe(200);
    expect(await relayedCall(r, 'relay:101', 'program: second call')).toBe(200);
    expect(await relayedCall(r, 'relay:202', 'thief in the container')).toBe(403);
    expect(await relayedCall(r, null, 'a caller the forwarder could not find')).toBe(403);
    expect(await relayedCall(r, undefined, 'this process, not relayed')).toBe(403);
    expect(asked(r)).toEqual(['program: first call', 'program: second call']);
    expect(r.trace.metrics['calls/other_process']).toBe(3);
    const reasons = r.trace.calls.filter((c) => c.ended === 'refused').map((c) => c.error?.message);
    expect(reasons).toEqual([
      expect.stringContaining('bound to the process that made its first call (relay:101)'),
      expect.stringContaining('could not be found'),
      expect.stringContaining('bound to the process that made its first call (relay:101)'),
    ]);
  });
});
