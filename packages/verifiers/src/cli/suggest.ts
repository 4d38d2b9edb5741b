/**
 * The edit distance of two words (optimal string alignment: insertions, deletions, substitutions
 * and swaps of two neighbouring letters each cost 1, so `trian` is 1 from `train`).
 */
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      (rows[i] as number[])[j] = best;
    }
  }
  return at(a.length, b.length);
}

/** `unknown command "trian" (did you mean "train"?)`: the closest known command within two edits, if any. */
export function unknownCommandMessage(command: string, known: readonly string[]): string {
  const scored = known.map((name) => ({ name, distance: editDistance(command, name) })).sort((x, y) => x.distance - y.distance);
  const best = scored[0];
  const hint = best && best.distance <= 2 && best.distance < command.length ? ` (did you mean "${best.name}"?)` : '';
  return `unknown command ${JSON.stringify(command)}${hint}`;
}
