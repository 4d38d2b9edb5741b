import type { Harness, HarnessCapabilities, HarnessLaunchContext, HarnessResult } from '../../../src/harness/harness.ts';
import { contentText } from '../../../src/model/messages.ts';

/** Options of `FetchProgramHarness`. */
export interface FetchProgramHarnessOptions {
  /** Per-request timeout of the program in milliseconds (default 60 s). */
  requestTimeoutMs?: number;
}

/**
 * A tiny external program, run in process: it speaks OpenAI chat completions over HTTP to
 * `endpoint.baseUrl` with the rollout secret as bearer key (the route an external CLI takes),
 * prints the reply and exits 0, or exits 1 with the error body on stderr. `inProcess` is false, so
 * agents register a session on the interception server for it.
 */
export class FetchProgramHarness implements Harness {
  readonly id = 'fetch-program';
  readonly inProcess = false;
  readonly capabilities: HarnessCapabilities = {
    executesCode: false,
    needsContainer: false,
    supportsMcp: false,
    supportsResume: false,
    supportsSkills: false,
    appendsSystemPrompt: true,
  };
  private readonly requestTimeoutMs: number;

  constructor(options: FetchProgramHarnessOptions = {}) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
  }

  async launch(context: HarnessLaunchContext): Promise<HarnessResult> {
    const { endpoint } = context;
    const body = {
      model: endpoint.model,
      messages: context.messages.map((m) => ({ role: m.role, content: 'content' in m ? contentText(m.content as never) : '' })),
    };
    let response: Response;
    try {
      response = await fetch(`${endpoint.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${endpoint.secret}` },
        body: JSON.stringify(body),
        signal: AbortSignal.any([context.signal, AbortSignal.timeout(this.requestTimeoutMs)]),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      return {
        exitCode: 1,
        stdout: '',
        stderr: `request failed: ${(error as Error).message}${cause ? ` (${cause.code ?? ''} ${cause.message ?? ''})` : ''}`,
      };
    }
    const text = await response.text();
    if (!response.ok) return { exitCode: 1, stdout: '', stderr: `HTTP ${response.status}: ${text.slice(0, 500)}` };
    const reply = JSON.parse(text) as { choices: { message: { content: string | null } }[] };
    return { exitCode: 0, stdout: reply.choices[0]?.message.content ?? '', stderr: '' };
  }
}
