import type { ConfigIssue } from '@troupe/verifiers';
import type { z } from 'zod';

function issuePaths(error: z.ZodError, root: string, key: (part: string) => string): ConfigIssue[] {
  return error.issues.map((issue) => {
    const path = [root, ...issue.path.map((part) => (typeof part === 'number' ? `[${part}]` : key(String(part))))]
      .join('.')
      .replace(/\.\[/g, '[');
    return { path, message: issue.message };
  });
}

const joined = (issues: readonly ConfigIssue[]) => issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');

/**
 * Formats zod issues as `root.path.to.field: message` lines, so an error names the bad field
 * (keys as the data spells them: a file's own field names).
 */
export function formatIssues(error: z.ZodError, root: string): string {
  return joined(issuePaths(error, root, (part) => part));
}

/**
 * Zod issues of a parsed config object as config issues: each path under `root`
 * (`algorithm.teacher.baseUrl`, `[2]` for an index), with its message.
 */
export function configIssues(error: z.ZodError, root: string): ConfigIssue[] {
  return issuePaths(error, root, (part) => part);
}

/** {@link configIssues} as one message: `algorithm.teacher.baseUrl: …; algorithm.decay: …`. */
export function formatConfigIssues(issues: readonly ConfigIssue[]): string {
  return joined(issues);
}
