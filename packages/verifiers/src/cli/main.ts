import { setPluginEnvironment, setPluginSearchPaths } from '../agent/plugins.ts';
import { TroupeError } from '../errors/troupe-error.ts';
import { evalCommand } from './eval-command.ts';
import { EXIT_CODES, HELP } from './help.ts';
import { unknownCommandMessage } from './suggest.ts';

// The `troupe` bin: importing this module runs the CLI, so it exports nothing.

/** The core's own commands (the trainer's are `DELEGATED_COMMANDS`). */
const COMMANDS = ['eval', 'validate', 'view', 'export', 'merge', 'replay', 'init', 'debug', 'rerun', 'help'];

async function main(argv: string[]): Promise<number> {
  setPluginSearchPaths([process.cwd()]);
  setPluginEnvironment(process.env);
  const [command, ...rest] = argv;
  if (!command || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  if (command === 'eval' || command === 'validate') return evalCommand(rest, command === 'validate');
  if (command === 'export') return (await import('./export-command.ts')).exportCommand(rest);
  if (command === 'merge') return (await import('./merge-command.ts')).mergeCommand(rest);
  if (command === 'replay') return (await import('./replay-command.ts')).replayCommand(rest);
  if (command === 'init') return (await import('./init-command.ts')).initCommand(rest);
  if (command === 'debug') return (await import('./debug-command.ts')).debugCommand(rest);
  if (command === 'rerun') return (await import('./rerun-command.ts')).rerunCommand(rest, (args) => evalCommand(args, false));
  const delegated = await import('./trainer-command.ts');
  if (command in delegated.DELEGATED_COMMANDS) return delegated.delegatedCommand(command, rest);
  const known = [...COMMANDS, ...Object.keys(delegated.DELEGATED_COMMANDS)];
  process.stderr.write(`troupe: ${unknownCommandMessage(command, known)}\n\n${HELP}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    if (TroupeError.isInstance(error) && error.name === 'ConfigError') {
      // The user's own error (an env module that throws at import) keeps its stack: their file and line.
      const cause = error.cause instanceof Error && error.cause.stack ? `\n  caused by ${error.cause.stack}` : '';
      process.stderr.write(`troupe: ${error.message}${cause}\n`);
      process.exitCode = EXIT_CODES.config;
    } else if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`troupe: ${(error as Error).message}\n(see troupe --help)\n`);
      process.exitCode = EXIT_CODES.config;
    } else if (TroupeError.isInstance(error) && error.name === 'ProviderError') {
      // The preflight check: the endpoint is wrong or down; nothing was run or written.
      process.stderr.write(`troupe: ${error.message}\n(no run directory was created; --no-preflight skips this check)\n`);
      process.exitCode = EXIT_CODES.config;
    } else {
      process.stderr.write(`troupe: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
