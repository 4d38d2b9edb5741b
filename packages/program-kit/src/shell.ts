/** Quotes one argument for a POSIX shell (single quotes; safe for any byte string without NUL). */
export function shellQuote(argument: string): string {
  if (/^[A-Za-z0-9_\-.,:/=@%+]+$/.test(argument)) return argument;
  return `'${argument.replace(/'/g, `'\\''`)}'`;
}

/** Joins an argv list into one shell command line, each argument quoted. */
export function shellCommand(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
