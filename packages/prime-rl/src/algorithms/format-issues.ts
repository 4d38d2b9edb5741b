import type { z } from 'zod';

/**
 * Formats zod issues as `root.path.to.field: message` lines, so an error names the bad field.
 */
export function formatIssues(error: z.ZodError, root: string): string {
  return error.issues
    .map((issue) => {
      const path = [root, ...issue.path.map((part) => (typeof part === 'number' ? `[${part}]` : String(part)))]
        .join('.')
        .replace(/\.\[/g, '[');
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}
