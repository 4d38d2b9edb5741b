/** A V8 CPU profile as `Profiler.stop` returns it (the fields read here). */
export interface CpuProfileData {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }[];
  samples?: number[];
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

/**
 * The top `count` entries of a CPU profile by self time, one line each: share of the samples,
 * milliseconds, function, file:line (the path from the package or `node:` module on).
 */
export function summarizeProfile(profile: CpuProfileData, count: number): string {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  const deltas = profile.timeDeltas ?? [];
  (profile.samples ?? []).forEach((id, i) => {
    const node = byNode.get(id);
    if (!node) return;
    const frame = node.callFrame;
    const file = frame.url.replace(/^.*\/(packages|node_modules)\//, '$1/').replace(/^file:\/\//, '');
    const key = `${frame.functionName || '(anonymous)'} ${file}${file ? `:${frame.lineNumber + 1}` : ''}`;
    const us = deltas[i + 1] ?? deltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + us);
    total += us;
  });
  const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, count);
  return [
    `profile: ${(total / 1000).toFixed(0)} ms sampled; top ${count} by self time`,
    ...rows.map(
      ([key, us]) => `${((100 * us) / total).toFixed(1).padStart(5)}% ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`,
    ),
  ].join('\n');
}
