import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Harness, HarnessCapabilities, HarnessLaunchContext, HarnessResult } from '../../src/harness/harness.ts';
import { contentText } from '../../src/model/messages.ts';

/**
 * A harness whose programs run in a separate "fleet" process (see program-fleet-process.ts):
 * each launch sends one job, the fleet speaks HTTP to the interception server with the rollout
 * secret, and the launch resolves with the program's result. Keeps program-side HTTP work off
 * the event loop being measured, as real external programs are.
 */
export class FleetHarness implements Harness {
  readonly id = 'fleet-program';
  readonly inProcess = false;
  readonly capabilities: HarnessCapabilities = {
    executesCode: false,
    needsContainer: false,
    supportsMcp: false,
    supportsResume: false,
    supportsSkills: false,
    appendsSystemPrompt: true,
  };
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, (result: { status: number; text: string }) => void>();
  private nextId = 0;

  constructor() {
    this.child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'program-fleet-process.ts')], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const result = JSON.parse(line) as { id: number; status: number; text: string };
      this.pending.get(result.id)?.(result);
      this.pending.delete(result.id);
    });
  }

  async launch(context: HarnessLaunchContext): Promise<HarnessResult> {
    const id = this.nextId++;
    const body = {
      model: context.endpoint.model,
      messages: context.messages.map((m) => ({ role: m.role, content: 'content' in m ? contentText(m.content as never) : '' })),
    };
    const result = await new Promise<{ status: number; text: string }>((resolve) => {
      this.pending.set(id, resolve);
      this.child.stdin?.write(
        `${JSON.stringify({ id, baseUrl: context.endpoint.baseUrl, secret: context.endpoint.secret, body })}\n`,
      );
    });
    if (result.status !== 200) return { exitCode: 1, stdout: '', stderr: `HTTP ${result.status}: ${result.text.slice(0, 300)}` };
    const reply = JSON.parse(result.text) as { choices: { message: { content: string | null } }[] };
    return { exitCode: 0, stdout: reply.choices[0]?.message.content ?? '', stderr: '' };
  }

  /** Ends the fleet process. */
  close(): void {
    this.child.stdin?.end();
  }
}
