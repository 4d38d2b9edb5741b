/** Directory inside a container where each exec records its pid (the leader of its process group). */
export const EXEC_PID_DIR = '/tmp/.troupe-exec';

/**
 * Runs `argv` so that it records its pid first. Container execs (`docker exec`, Kubernetes exec,
 * both through runc) make every exec its own session and process-group leader, so that pid is
 * also the group id killed on timeout or abort.
 */
export function wrapWithPidFile(argv: string[], pidFile: string): string[] {
  return ['sh', '-c', `{ mkdir -p ${EXEC_PID_DIR} && echo $$ > "$0"; } 2>/dev/null; exec "$@"`, pidFile, ...argv];
}

/** Shell command that SIGKILLs the process group recorded in `pidFile` (never group 1). */
export function killCommand(pidFile: string): string[] {
  return [
    'sh',
    '-c',
    `p=$(cat "${pidFile}" 2>/dev/null) && [ -n "$p" ] && [ "$p" != 1 ] && { kill -9 -"$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; }; rm -f "${pidFile}"; true`,
  ];
}
