import { describe, expect, it } from 'vitest';
import { editDistance, unknownCommandMessage } from './suggest.ts';

describe('unknownCommandMessage', () => {
  it('counts a swap of two neighbouring letters as one edit', () => {
    expect(editDistance('trian', 'train')).toBe(1);
    expect(editDistance('eval', 'eval')).toBe(0);
    expect(editDistance('', 'view')).toBe(4);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  it('suggests the closest command within two edits, and nothing for a word far from all', () => {
    const known = ['eval', 'validate', 'view', 'train', 'crossplay'];
    expect(unknownCommandMessage('trian', known)).toBe('unknown command "trian" (did you mean "train"?)');
    expect(unknownCommandMessage('evl', known)).toBe('unknown command "evl" (did you mean "eval"?)');
    expect(unknownCommandMessage('deploy', known)).toBe('unknown command "deploy"');
    expect(unknownCommandMessage('x', known)).toBe('unknown command "x"');
  });
});
