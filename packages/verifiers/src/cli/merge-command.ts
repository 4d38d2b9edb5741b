/** `troupe merge` (placeholder until the merge lands in this file). */
export async function mergeCommand(_args: string[]): Promise<number> {
  return 2;
}
