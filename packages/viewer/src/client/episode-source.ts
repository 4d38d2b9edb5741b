// Where a page's episode records come from: gzip + base64 chunks embedded in the page (a static
// report), or `api/episodes/<id>` on the server that served the page.
import type { EpisodeMode, EpisodeRecord, EpisodeRow } from './types.ts';

const documentReady = new Promise<void>((resolve) => {
  if (document.readyState !== 'loading') resolve();
  else document.addEventListener('DOMContentLoaded', () => resolve(), { once: true });
});

/** Loads episode records of one run on demand, keeping the most recent ones. */
export class EpisodeSource {
  private readonly mode: EpisodeMode;
  /** chunkStarts[k] = row index of chunk k's first episode. */
  private readonly chunkStarts: number[] = [];
  private readonly chunkCache = new Map<number, Promise<string[]>>();
  private readonly episodeCache = new Map<string, EpisodeRecord>();

  constructor(mode: EpisodeMode) {
    this.mode = mode;
    if (mode.episodes === 'embedded') {
      let first = 0;
      for (const count of mode.chunks) {
        this.chunkStarts.push(first);
        first += count;
      }
    }
  }

  /** Inflates chunk k (base64 → gzip → JSON lines), keeping the few most recent ones. */
  private readChunk(k: number): Promise<string[]> {
    const cached = this.chunkCache.get(k);
    if (cached) return cached;
    const id = `${this.mode.episodes === 'embedded' ? (this.mode.chunkPrefix ?? '') : ''}chunk-${k}`;
    const promise = (async () => {
      let el = document.getElementById(id);
      if (!el) {
        await documentReady;
        el = document.getElementById(id);
      }
      // bare-error: browser page code: shown in the page, never thrown to a caller of troupe
      if (!el) throw new Error(`episode chunk ${k} is not embedded in this page`);
      const binary = atob((el.textContent ?? '').trim());
      const bytes = new Uint8Array(binary.length);
      for (let j = 0; j < binary.length; j++) bytes[j] = binary.charCodeAt(j);
      const text = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).text();
      return text.split('\n');
    })();
    this.chunkCache.set(k, promise);
    promise.catch(() => this.chunkCache.delete(k));
    if (this.chunkCache.size > 6) this.chunkCache.delete(this.chunkCache.keys().next().value!);
    return promise;
  }

  private chunkOf(i: number): number {
    const starts = this.chunkStarts;
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= i) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** The full record of the episode in `row`. */
  async load(row: EpisodeRow): Promise<EpisodeRecord> {
    const cached = this.episodeCache.get(row.id);
    if (cached) return cached;
    let record: EpisodeRecord;
    if (this.mode.episodes === 'embedded') {
      const k = this.chunkOf(row.i);
      const lines = await this.readChunk(k);
      const line = lines[row.i - this.chunkStarts[k]!];
      // bare-error: browser page code: shown in the page, never thrown to a caller of troupe
      if (line === undefined) throw new Error(`episode ${row.id} is not embedded in this page`);
      record = JSON.parse(line) as EpisodeRecord;
    } else {
      const path = `${this.mode.base ?? ''}api/episodes/${encodeURIComponent(row.id)}`;
      const response = await fetch(path);
      // bare-error: browser page code: shown in the page, never thrown to a caller of troupe
      if (!response.ok) throw new Error(`GET ${path}: HTTP ${response.status}`);
      record = (await response.json()) as EpisodeRecord;
    }
    if (this.episodeCache.size > 20) this.episodeCache.delete(this.episodeCache.keys().next().value!);
    this.episodeCache.set(row.id, record);
    return record;
  }
}
