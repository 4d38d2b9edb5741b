import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { renderRunHtml } from './render-run-html.ts';
import { loadViewerRun } from './run-directory.ts';

export const WriteHtmlReportOptionsSchema = z.object({
  /** The run directory (holds traces.jsonl). */
  runDir: z.string().min(1, 'runDir must not be empty'),
  /** Where to write the self-contained HTML file (parent folders are created). */
  outFile: z.string().min(1, 'outFile must not be empty'),
  /** Called with each problem met while reading the run (a torn last line, an invalid line). */
  onWarning: z
    .custom<(message: string) => void>((v) => v === undefined || typeof v === 'function', 'onWarning must be a function')
    .optional(),
});
/**
 * What {@link writeHtmlReport} takes: the run directory, the output HTML file and a warning callback;
 * see {@link WriteHtmlReportOptionsSchema}.
 */
export type WriteHtmlReportOptions = z.infer<typeof WriteHtmlReportOptionsSchema>;

/**
 * Writes a run as one static HTML file with everything inlined (scripts, styles, every episode),
 * so it opens offline and can be attached to a paper or an issue.
 */
export async function writeHtmlReport(options: WriteHtmlReportOptions): Promise<void> {
  const { runDir, outFile, onWarning } = WriteHtmlReportOptionsSchema.parse(options);
  const run = await loadViewerRun({ runDir });
  for (const warning of run.warnings) onWarning?.(warning);
  const file = resolve(outFile);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, renderRunHtml(run));
}
