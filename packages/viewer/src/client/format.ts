// Number, token, duration and cost formatting shared by every view.

const intFormat = new Intl.NumberFormat('en-US');
type Maybe = number | null | undefined;

export const fmt = {
  int: (n: Maybe): string => (n === null || n === undefined ? '—' : intFormat.format(Math.round(n))),
  num(n: Maybe, digits = 3): string {
    if (n === null || n === undefined || Number.isNaN(n)) return '—';
    if (Number.isInteger(n)) return intFormat.format(n);
    const abs = Math.abs(n);
    if (abs >= 1000) return intFormat.format(Math.round(n));
    return String(Number(n.toFixed(abs >= 100 ? 1 : digits)));
  },
  tokens(n: Maybe): string {
    if (n === null || n === undefined) return '—';
    if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
    if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
    if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
    return intFormat.format(n);
  },
  /** A duration given in milliseconds. */
  ms(n: Maybe): string {
    if (n === null || n === undefined) return '—';
    if (n < 1000) return `${Math.round(n)} ms`;
    if (n < 60_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} s`;
    if (n < 3_600_000) return `${Math.floor(n / 60_000)} min ${Math.round((n % 60_000) / 1000)} s`;
    return `${(n / 3_600_000).toFixed(1)} h`;
  },
  /** A cost in US dollars; 0 and absent read as "—". */
  cost(n: Maybe): string {
    if (!n) return '—';
    return n < 0.01 ? `$${n.toFixed(5)}` : `$${n.toFixed(2)}`;
  },
  pct: (n: Maybe): string => (n === null || n === undefined ? '—' : `${(n * 100).toFixed(n === 1 || n === 0 ? 0 : 1)}%`),
  /** A signed difference (+0.25, −0.1). */
  delta(n: Maybe): string {
    if (n === null || n === undefined || Number.isNaN(n)) return '—';
    if (n === 0) return '0';
    return `${n > 0 ? '+' : '−'}${fmt.num(Math.abs(n))}`;
  },
};
