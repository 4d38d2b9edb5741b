import type { EvalProgress } from '../eval/eval-runner.ts';

/** A one-line progress bar on a TTY; a line every 10 s (or 10 %) otherwise. */
export function progressReporter(options: { stream: NodeJS.WriteStream; label: string }) {
  const { stream, label } = options;
  const started = Date.now();
  let lastLine = 0;
  let lastFraction = -1;
  const format = (p: EvalProgress) => {
    const seconds = (Date.now() - started) / 1000;
    const rate = seconds > 0 ? (p.done / seconds).toFixed(1) : '0';
    const reward = p.rewardMean === null ? 'n/a' : p.rewardMean.toFixed(3);
    return `${p.done}/${p.total} episodes  failed ${p.failed}  reward ${reward}  ${rate} ep/s`;
  };
  return {
    update: (p: EvalProgress) => {
      if (stream.isTTY) {
        const width = 24;
        const filled = p.total ? Math.round((p.done / p.total) * width) : width;
        stream.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${format(p)}\u001b[K`);
        return;
      }
      const fraction = p.total ? Math.floor((p.done / p.total) * 10) : 10;
      if (Date.now() - lastLine > 10_000 || fraction !== lastFraction || p.done === p.total) {
        lastLine = Date.now();
        lastFraction = fraction;
        stream.write(`${label}: ${format(p)}\n`);
      }
    },
    done: () => {
      if (stream.isTTY) stream.write('\n');
    },
  };
}
