import { describe, expect, it } from 'vitest';
import { SPECIAL_TOKENS, WordTokenizer } from './tokenizer.ts';

describe('WordTokenizer', () => {
  const tok = WordTokenizer.fromCorpus({
    corpus: ['Betting so far: check, bet. Your legal actions: [fold] or [call].', '[bet]'],
  });

  it('puts the special tokens first and bracketed actions as single words', () => {
    expect(tok.vocab.slice(0, SPECIAL_TOKENS.length)).toEqual([...SPECIAL_TOKENS]);
    expect(tok.encode('[call]')).toEqual([tok.id('[call]')]);
    expect(tok.encode('so far: check')).toEqual([tok.id('so'), tok.id('far'), tok.id(':'), tok.id('check')]);
    expect(tok.encode('raise')).toEqual([1]);
  });

  it('decodes words back, dropping special tokens', () => {
    expect(tok.decode([tok.id('[bet]'), tok.eosId])).toBe('[bet]');
    expect(tok.decode(tok.encode('Betting so far: check, bet.'))).toBe('Betting so far: check, bet.');
  });

  it('renders chats so that each turn extends the previous prompt plus completion', () => {
    const first = tok.renderChat({
      messages: [
        { role: 'system', content: 'so' },
        { role: 'user', content: 'Betting' },
      ],
    });
    expect(first).toEqual([2, tok.id('so'), 3, tok.id('Betting'), 4]);
    const completion = [tok.id('[bet]'), tok.eosId];
    const second = tok.renderChat({
      messages: [
        { role: 'system', content: 'so' },
        { role: 'user', content: 'Betting' },
        { role: 'assistant', content: '[bet]' },
        { role: 'user', content: 'far' },
      ],
    });
    expect(second.slice(0, first.length + 2)).toEqual([...first, ...completion]);
  });

  it('round-trips through JSON and refuses a vocabulary without the specials', () => {
    expect(WordTokenizer.fromJSON(JSON.parse(JSON.stringify(tok.toJSON()))).vocab).toEqual(tok.vocab);
    expect(() => new WordTokenizer(['a', 'b', 'c', 'd', 'e', 'f'])).toThrow(/vocab\[0\] must be <pad>/);
  });
});
