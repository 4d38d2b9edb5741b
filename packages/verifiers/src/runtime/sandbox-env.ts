/** Names of variables that are never inherited into a sandbox (only passed per command, on purpose). */
export const SECRET_ENV_NAME = /API_KEY|SECRET|TOKEN/i;

/**
 * Drops every variable whose name looks like a credential (`*API_KEY*`, `*SECRET*`, `*TOKEN*`).
 * Runtimes apply it to runtime- and sandbox-level environments; only `exec({ env })` may pass
 * such a variable, because only that caller can know it is meant for that one program.
 */
export function withoutSecrets(env: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!env) return out;
  for (const [name, value] of Object.entries(env)) {
    if (!SECRET_ENV_NAME.test(name)) out[name] = value;
  }
  return out;
}
