import type { Socket } from 'node:net';
import type { CallerProcessFinder } from './caller-process.ts';

/**
 * Binds a rollout's secret to the process that made its first call: every later connection that
 * presents the secret must come from that same process, or it is refused. A program makes its
 * first model call before it runs any command (a command only ever runs because a reply asked for
 * it), so code the program runs — a tool command, what it leaves behind — is never that process:
 * a secret it reads from the program's environment, `/proc/<pid>/environ`, a config file or
 * memory is refused from its own connection.
 *
 * The caller is the process whose file table holds the client end of the connection (see
 * {@link CallerProcessFinder}): on this host directly, or inside a container behind a runtime's
 * relay that registered who it relays for. A connection of this very process that no relay
 * registered binds to this process (`self`). When the first caller cannot be found (a process
 * this one may not read), the binding is not enforced, and {@link CallerBinding.caller} says so.
 */
export class CallerBinding {
  private bound: Promise<string> | undefined;
  private readonly finder: CallerProcessFinder;

  constructor(finder: CallerProcessFinder) {
    this.finder = finder;
  }

  /**
   * Who the secret is bound to (`pid:<n>`, `relay:<n>`, `self`) once its first caller was found,
   * or `unknown` when that caller could not be found (this host may not read the process: the
   * binding is then not enforced).
   */
  caller: string | undefined;

  /** Checks the connection `socket` presenting the secret: null when it may call, else why it may not. */
  async check(socket: Socket): Promise<string | null> {
    this.bound ??= this.finder.callerOf(socket).then((caller) => {
      this.caller = caller ?? 'unknown';
      this.first = socket;
      return this.caller;
    });
    const caller = await this.bound;
    if (caller === 'unknown' || this.first === socket) return null;
    const now = await this.finder.callerOf(socket, caller);
    if (now === caller) return null;
    if (now === null) return 'refused: the process that made this call could not be found';
    return `refused: this rollout's secret is bound to the process that made its first call (${caller}); this call came from another process`;
  }

  private first: Socket | undefined;
}
