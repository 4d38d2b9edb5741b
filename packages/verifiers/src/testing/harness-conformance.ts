import { ProviderError, SandboxError } from '../errors/troupe-error.ts';
import type { Harness, HarnessResult, ModelEndpoint } from '../harness/harness.ts';
import { InterceptionServer } from '../interception/interception-server.ts';
import { RolloutSession } from '../interception/rollout-session.ts';
import { contentText, type Message } from '../model/messages.ts';
import type { ModelRequest } from '../model/model-client.ts';
import { OpenAICompatibleClient } from '../model/openai-client.ts';
import { LocalRuntime } from '../runtime/local-runtime.ts';
import type { ExecOptions, ExecResult, Runtime, Sandbox } from '../runtime/runtime.ts';
import { Task } from '../task/task.ts';
import { Trace } from '../trace/trace.ts';
import { ScriptedModelServer, type ScriptedModelServerOptions } from './scripted-model-server.ts';

// ---------------------------------------------------------------------------------------------
// The harness rig: a real program against the scripted model, behind real interception.
// ---------------------------------------------------------------------------------------------

/** Options of `openHarnessRig`. */
export interface HarnessRigOptions {
  harness: Harness;
  /** What the scripted model answers (replies in order, or a function). */
  script: ScriptedModelServerOptions['script'];
  /** The runtime of the sandbox (default: a new `LocalRuntime`). */
  runtime?: Runtime;
  /** The model name imposed by interception (default `scripted-model`). */
  model?: string;
  log?: (line: string) => void;
}

/** One launch of the rig: the trace, the program's result and the rollout secret. */
export interface HarnessRigRun {
  trace: Trace;
  result: HarnessResult;
  /** The rollout secret the program was given (to check it never reaches the trace). */
  secret: string;
  /** The base URL the program was given. */
  baseUrl: string;
}

/**
 * Everything a harness needs to run for real: a scripted model server, an
 * `OpenAICompatibleClient` pointed at it, an `InterceptionServer`, a `RolloutSession` per launch
 * and a sandbox. `launch` runs `harness.setup` (once) then `harness.launch` exactly as the agent
 * does; the sandbox stays alive until `close` so tests can read the files the program made.
 */
export class HarnessRig {
  readonly harness: Harness;
  readonly server: ScriptedModelServer;
  readonly interception: InterceptionServer;
  readonly sandbox: Sandbox;
  readonly model: string;
  private readonly client: OpenAICompatibleClient;
  private readonly ownedRuntime: Runtime | null;
  private readonly log: (line: string) => void;
  private setupDone = false;

  private constructor(init: {
    harness: Harness;
    server: ScriptedModelServer;
    interception: InterceptionServer;
    sandbox: Sandbox;
    model: string;
    client: OpenAICompatibleClient;
    ownedRuntime: Runtime | null;
    log: (line: string) => void;
  }) {
    this.harness = init.harness;
    this.server = init.server;
    this.interception = init.interception;
    this.sandbox = init.sandbox;
    this.model = init.model;
    this.client = init.client;
    this.ownedRuntime = init.ownedRuntime;
    this.log = init.log;
  }

  /** Starts the servers and creates the sandbox. */
  static async open(options: HarnessRigOptions): Promise<HarnessRig> {
    const model = options.model ?? 'scripted-model';
    const server = await ScriptedModelServer.start({ script: options.script, model });
    const interception = new InterceptionServer(options.log ? { log: options.log } : {});
    await interception.start();
    const runtime = options.runtime ?? new LocalRuntime();
    const sandbox = await runtime.createSandbox();
    const client = new OpenAICompatibleClient({
      baseUrl: server.baseUrl,
      apiKey: 'sk-scripted',
      model,
      retry: { maxRetries: 0 },
    });
    return new HarnessRig({
      harness: options.harness,
      server,
      interception,
      sandbox,
      model,
      client,
      ownedRuntime: options.runtime ? null : runtime,
      log: options.log ?? (() => undefined),
    });
  }

  /** Runs setup (first time only) and one launch on a task with `prompt`. */
  async launch(options: { prompt: string; systemPrompt?: string; signal?: AbortSignal }): Promise<HarnessRigRun> {
    const signal = options.signal ?? new AbortController().signal;
    if (!this.setupDone) {
      await this.harness.setup?.({ sandbox: this.sandbox, log: this.log, signal });
      this.setupDone = true;
    }
    const task = new Task({ prompt: options.prompt, ...(options.systemPrompt ? { systemPrompt: options.systemPrompt } : {}) });
    const trace = new Trace({
      task: task.record,
      agent: { name: 'agent', trainable: true, model: this.model, harness: this.harness.id, runtime: this.sandbox.runtime },
    });
    const session = new RolloutSession({ trace, client: this.client, model: this.model });
    const baseUrl = await this.sandbox.reachHost(this.interception.register(session).baseUrl);
    const endpoint: ModelEndpoint = {
      baseUrl,
      secret: session.secret,
      model: this.model,
      direct: (request, o) => session.handle(request, { dialect: 'direct', ...(o?.signal ? { signal: o.signal } : {}) }),
    };
    const messages = foldSystemPrompt(task.promptMessages, this.harness.capabilities.appendsSystemPrompt);
    try {
      const result = await this.harness.launch({ task, trace, sandbox: this.sandbox, endpoint, messages, signal, log: this.log });
      await session.drain();
      return { trace, result, secret: session.secret, baseUrl };
    } finally {
      session.conclude('agent_completed');
      this.interception.unregister(session);
    }
  }

  /** Stops the sandbox and both servers. */
  async close(): Promise<void> {
    await this.sandbox.stop().catch(() => undefined);
    await this.ownedRuntime?.close?.().catch(() => undefined);
    await this.interception.close().catch(() => undefined);
    await this.server.close().catch(() => undefined);
  }
}

function foldSystemPrompt(messages: Message[], appends: boolean): Message[] {
  if (appends || messages[0]?.role !== 'system') return messages;
  const [system, ...rest] = messages;
  const first = rest[0];
  if (first?.role === 'user')
    return [{ role: 'user', content: `${system?.content}\n\n${contentText(first.content)}` }, ...rest.slice(1)];
  return [{ role: 'user', content: system?.content ?? '' }, ...rest];
}

/** The messages of the prompt that call `index` of a trace was made with (root first). */
export function callPrompt(trace: Trace, index: number): Message[] {
  const call = trace.calls[index];
  if (!call || call.promptNode == null) return [];
  return trace.path(call.promptNode).map((id) => trace.node(id).message as Message);
}

// ---------------------------------------------------------------------------------------------
// The conformance checks.
// ---------------------------------------------------------------------------------------------

/** One conformance check and whether it held. */
export interface ConformanceCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/**
 * The harness conformance test against the scripted model: a prompt goes in, the scripted final
 * reply comes out, the trace holds at least one call, exit 0 is mapped, and the rollout secret
 * appears nowhere in the trace JSON. With `failureExit`, a second run whose model call fails
 * (HTTP 400) must end with a non-zero exit code. Returns the checks (assert that all hold).
 */
export async function runHarnessConformance(options: {
  harness: Harness;
  runtime?: Runtime;
  /** Check that a failing model call maps to a non-zero exit (one extra program run). */
  failureExit?: boolean;
  log?: (line: string) => void;
}): Promise<ConformanceCheck[]> {
  const finalReply = 'conformance-final-reply';
  const prompt = 'Reply with the conformance word. conformance-prompt-marker';
  const checks: ConformanceCheck[] = [];
  const add = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail });
  const script = (request: ModelRequest): string | { error: { status: number; message: string } } =>
    request.messages.some((m) => m.role === 'user' && contentText(m.content).includes('conformance-fail-marker'))
      ? { error: { status: 400, message: 'conformance: refused on purpose' } }
      : finalReply;
  const rig = await HarnessRig.open({
    harness: options.harness,
    script,
    ...(options.runtime ? { runtime: options.runtime } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  try {
    const run = await rig.launch({ prompt });
    const firstPrompt = callPrompt(run.trace, 0);
    add(
      'prompt in',
      firstPrompt.some((m) => m.role === 'user' && contentText(m.content).includes('conformance-prompt-marker')),
      'the first model call carries the task prompt',
    );
    add(
      'final reply out',
      run.trace.lastReply.includes(finalReply),
      `trace.lastReply = ${JSON.stringify(run.trace.lastReply.slice(0, 200))}`,
    );
    add('at least one call', run.trace.calls.length >= 1, `${run.trace.calls.length} call(s)`);
    add('exit mapped', run.result.exitCode === 0, `exit ${run.result.exitCode}; stderr tail: ${run.result.stderr.slice(-300)}`);
    const json = JSON.stringify(run.trace.toJSON());
    add('secret not in trace', !json.includes(run.secret), 'the rollout secret must never be recorded');
    add(
      'secret not in output',
      !`${run.result.stdout}${run.result.stderr}`.includes(run.secret),
      'the program must not print its key',
    );
    if (options.failureExit) {
      const failed = await rig.launch({ prompt: 'conformance-fail-marker' });
      add('failure exit mapped', failed.result.exitCode !== 0, `exit ${failed.result.exitCode} after a 400 from the model`);
    }
  } finally {
    await rig.close();
  }
  return checks;
}

// ---------------------------------------------------------------------------------------------
// The recording sandbox: for programs the tests cannot download (PyPI and vendor installs).
// ---------------------------------------------------------------------------------------------

/** One command seen by a `RecordingSandbox`. */
export interface RecordedExec {
  argv: string[];
  options: ExecOptions;
}

/**
 * A sandbox that runs nothing and records everything: exec commands (with env and stdin),
 * written and uploaded files. An exec of the form `['sh', '-c', <script>, 'write-file', <path>, …]`
 * with `stdin` is recorded as a file write too (the harness kit writes files that way). `mktemp`
 * commands answer a fresh path; everything else answers `respond(argv)` or exit 0.
 */
export class RecordingSandbox implements Sandbox {
  readonly id = 'recording';
  readonly runtime: string;
  readonly workdir: string;
  readonly execs: RecordedExec[] = [];
  readonly files = new Map<string, string>();
  readonly uploads: { hostPath: string; sandboxPath: string }[] = [];
  private readonly respond: ((argv: string[], options: ExecOptions) => Partial<ExecResult> | undefined) | undefined;
  private counter = 0;

  constructor(
    options: {
      runtime?: string;
      workdir?: string;
      respond?: (argv: string[], options: ExecOptions) => Partial<ExecResult> | undefined;
    } = {},
  ) {
    this.runtime = options.runtime ?? 'recording';
    this.workdir = options.workdir ?? '/app';
    this.respond = options.respond;
  }

  async exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    const argv = typeof command === 'string' ? ['sh', '-c', command] : [...command];
    this.execs.push({ argv, options });
    if (argv[0] === 'sh' && argv[1] === '-c' && argv[3] === 'write-file' && argv[4] && options.stdin !== undefined) {
      this.files.set(argv[4], typeof options.stdin === 'string' ? options.stdin : new TextDecoder().decode(options.stdin));
    }
    const base: ExecResult = { exitCode: 0, stdout: '', stderr: '', timedOut: false, durationMs: 0 };
    if (argv.join(' ').includes('mktemp -d')) {
      this.counter += 1;
      base.stdout = `/tmp/troupe-recorded-${String(this.counter).padStart(8, '0')}\n`;
    }
    return { ...base, ...(this.respond?.(argv, options) ?? {}) };
  }

  async readFile(path: string): Promise<Uint8Array> {
    const content = this.files.get(path);
    if (content === undefined) throw new SandboxError(`recording sandbox: no file ${path}`);
    return new TextEncoder().encode(content);
  }

  async writeFile(path: string, data: string | Uint8Array): Promise<void> {
    this.files.set(path, typeof data === 'string' ? data : new TextDecoder().decode(data));
  }

  async upload(hostPath: string, sandboxPath: string): Promise<void> {
    this.uploads.push({ hostPath, sandboxPath });
  }

  async download(): Promise<void> {}

  async alive(): Promise<boolean> {
    return true;
  }

  async reachHost(hostUrl: string): Promise<string> {
    return hostUrl;
  }

  async stop(): Promise<void> {}

  /** The command lines run, one string each (for assertions). */
  get commandLines(): string[] {
    return this.execs.map((e) => e.argv.join(' '));
  }
}

/**
 * The launch of a program: the one command run with an explicitly empty stdin that is neither a
 * file write (which pipes content) nor scratch bookkeeping (`mktemp`, `rm`).
 */
function isLaunch(argv: string[], options: ExecOptions): boolean {
  if (options.stdin !== '') return false;
  const line = argv.join(' ');
  return !line.includes('mktemp -d') && argv[0] !== 'rm';
}

/** What a recorded launch must show, beyond the generic checks. */
export interface RecordedExpectations {
  /** Strings the setup commands must contain (the pinned install). */
  install: string[];
  /** Strings the launch command line must contain (flags). */
  launch?: string[];
}

/** What the recorded launch is given: a secret, an endpoint and a prompt the checks look for. */
const RECORDED = {
  secret: 'rs-recorded-secret-0123456789',
  baseUrl: 'http://127.0.0.1:43210/v1',
  prompt: 'recorded-prompt-marker: fix the bug',
};

/** One recorded setup and launch of a harness against a `RecordingSandbox`. */
interface RecordedLaunch {
  sandbox: RecordingSandbox;
  /** How many commands the setup ran (the launch's commands follow them in `sandbox.execs`). */
  setupCount: number;
  trace: Trace;
  result: HarnessResult;
}

/**
 * Runs the harness's `setup`, then its `launch` with the recorded prompt, endpoint and secret,
 * against a `RecordingSandbox` whose launch command exits with code 3.
 */
async function recordLaunch(harness: Harness, runtime: string): Promise<RecordedLaunch> {
  let launching = false;
  const sandbox = new RecordingSandbox({
    runtime,
    respond: (argv, execOptions) =>
      launching && isLaunch(argv, execOptions) ? { exitCode: 3, stdout: 'recorded stdout' } : undefined,
  });
  const signal = new AbortController().signal;
  await harness.setup?.({ sandbox, log: () => undefined, signal });
  const setupCount = sandbox.execs.length;
  const task = new Task({ prompt: RECORDED.prompt });
  const trace = new Trace({ task: task.record, agent: { name: 'agent', trainable: true } });
  launching = true;
  const result = await harness.launch({
    task,
    trace,
    sandbox,
    endpoint: {
      baseUrl: RECORDED.baseUrl,
      secret: RECORDED.secret,
      model: 'recorded-model',
      direct: () => Promise.reject(new ProviderError('no direct transport here')),
    },
    messages: task.promptMessages,
    signal,
    log: () => undefined,
  });
  return { sandbox, setupCount, trace, result };
}

/**
 * Conformance for programs the tests cannot run (their install downloads are out of reach): runs
 * `setup` and `launch` against a `RecordingSandbox` (whose launch command exits with code 3) and
 * checks that the install commands carry the pinned program, the launch passes the prompt, the
 * endpoint reaches the program (env or config file), the secret is passed by env or config file
 * but never on the command line, stdin is closed, and the exit code is mapped through.
 */
export async function runRecordedHarnessConformance(options: {
  harness: Harness;
  expect: RecordedExpectations;
  runtime?: string;
}): Promise<{ checks: ConformanceCheck[]; sandbox: RecordingSandbox; result: HarnessResult }> {
  const { sandbox, setupCount, trace, result } = await recordLaunch(options.harness, options.runtime ?? 'docker');
  const { secret } = RECORDED;
  const setupLines = sandbox.commandLines.slice(0, setupCount).join('\n');
  const main = sandbox.execs.slice(setupCount).find((e) => isLaunch(e.argv, e.options));
  const mainLine = main?.argv.join(' ') ?? '';
  const files = [...sandbox.files.values()].join('\n');
  const envText = Object.values(main?.options.env ?? {}).join('\n');
  const promptSeen = main !== undefined && [mainLine, envText, files].some((text) => text.includes('recorded-prompt-marker'));
  const checks: ConformanceCheck[] = [];
  const add = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail });
  add(
    'setup installs',
    setupCount > 0 && options.expect.install.every((s) => setupLines.includes(s)),
    `setup ran ${setupCount} command(s); expected ${JSON.stringify(options.expect.install)}`,
  );
  add('prompt in', promptSeen, 'the launch command, its env or a file it reads carries the prompt');
  add(
    'launch flags',
    (options.expect.launch ?? []).every((s) => mainLine.includes(s)),
    `expected ${JSON.stringify(options.expect.launch ?? [])} in ${mainLine.slice(0, 400)}`,
  );
  add(
    'endpoint wired',
    [mainLine, envText, files].some((text) => text.includes('127.0.0.1:43210')),
    'the interception base URL reaches the program (argv, env or config)',
  );
  add('secret wired', (envText + files).includes(secret), 'the rollout secret reaches the program (env or config)');
  add(
    'secret not on command line',
    !sandbox.execs.some((e) => e.argv.join(' ').includes(secret)),
    'argv is visible to every process: keep the key in env or files',
  );
  add('stdin closed', main !== undefined, 'the launch runs with stdin closed (programs that read stdin hang on an open pipe)');
  add('exit mapped', result.exitCode === 3, `exit ${result.exitCode} (the recorded launch exited 3)`);
  add('secret not in trace', !JSON.stringify(trace.toJSON()).includes(secret), 'the rollout secret must never be recorded');
  return { checks, sandbox, result };
}
