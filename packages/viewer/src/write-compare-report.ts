import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { renderCompareHtml } from './render-compare-html.ts';
import { loadViewerRun } from './run-directory.ts';

export const WriteCompareReportOptionsSchema = z.object({
  /** The two run directories, A then B. */
  runDirs: z.tuple([z.string().min(1, 'runDirs[0] must not be empty'), z.string().min(1, 'runDirs[1] must not be empty')]),
  /** Where to write the self-contained HTML file (parent folders are created). */
  outFile: z.string().min(1, 'outFile must not be empty'),
  /** Called with each problem met while reading the runs. */
  onWarning: z
    .custom<(message: string) => void>((v) => v === undefined || typeof v === 'function', 'onWarning must be a function')
    .optional(),
});
/**
 * What {@link writeCompareReport} takes: the two run directories, the output HTML file and a warning
 * callback; see {@link WriteCompareReportOptionsSchema}.
 */
export type WriteCompareReportOptions = z.infer<typeof WriteCompareReportOptionsSchema>;

/** Writes a comparison of two runs as one static HTML file with both runs' episodes inlined. */
export async function writeCompareReport(options: WriteCompareReportOptions): Promise<void> {
  const { runDirs, outFile, onWarning } = WriteCompareReportOptionsSchema.parse(options);
  const runs = await Promise.all(runDirs.map((runDir) => loadViewerRun({ runDir })));
  for (const run of runs) for (const warning of run.warnings) onWarning?.(`${run.name}: ${warning}`);
  const file = resolve(outFile);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, renderCompareHtml([runs[0]!, runs[1]!]));
}
