import { TroupeError } from '@troupe/verifiers';
import { viewCommand } from './view-command.ts';

// The `troupe-viewer` bin, which `troupe view` runs: importing this module runs the command, so
// it exports nothing. Exit codes as the troupe CLI's: 0 ok, 2 a bad argument or run directory, 1
// anything else.

async function main(argv: string[]): Promise<number> {
  const args = argv[0] === 'view' ? argv.slice(1) : argv;
  return viewCommand({ args });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    if (TroupeError.isInstance(error) && error.name === 'ConfigError') {
      process.stderr.write(`troupe view: ${error.message}\n`);
      process.exitCode = 2;
    } else if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`troupe view: ${(error as Error).message}\n(see troupe view --help)\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`troupe view: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
