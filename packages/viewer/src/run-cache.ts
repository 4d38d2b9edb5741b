import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { loadViewerRun, type ViewerRun } from './run-directory.ts';
import { buildRunIndex, type ViewerIndex } from './run-index.ts';

/** A run as a server holds it: loaded, indexed, and the pages built from it (on first request). */
export interface LoadedRun {
  run: ViewerRun;
  index: ViewerIndex;
  byId: Map<string, number>;
  /** traces.jsonl size and mtime when it was read; a change triggers a reload. */
  stamp: string;
  /** Pages and JSON built from this load, by name (built on first request). */
  built: Map<string, string>;
}

/**
 * One run directory, read on first use and re-read when traces.jsonl changes (a run still being
 * written can be watched by reloading the page). Concurrent requests share one reload.
 */
export class RunCache {
  readonly runDir: string;
  private readonly tracesFile: string;
  private readonly onWarning: ((message: string) => void) | undefined;
  private loaded: LoadedRun | null = null;
  private reloading: Promise<LoadedRun> | null = null;

  constructor(options: { runDir: string; onWarning?: ((message: string) => void) | undefined }) {
    this.runDir = resolve(options.runDir);
    this.tracesFile = join(this.runDir, 'traces.jsonl');
    this.onWarning = options.onWarning;
  }

  private async stamp(): Promise<string> {
    const s = await stat(this.tracesFile);
    return `${s.size}:${s.mtimeMs}`;
  }

  private async read(): Promise<LoadedRun> {
    const stamp = await this.stamp();
    const run = await loadViewerRun({ runDir: this.runDir });
    for (const warning of run.warnings) this.onWarning?.(warning);
    const byId = new Map<string, number>();
    for (const [i, e] of run.episodes.entries()) byId.set(e.record.id, i);
    return { run, index: buildRunIndex(run), byId, stamp, built: new Map() };
  }

  /** The run as it is now on disk (the previous load when traces.jsonl cannot be read). */
  async current(): Promise<LoadedRun> {
    if (this.loaded) {
      let stamp: string;
      try {
        stamp = await this.stamp();
      } catch {
        return this.loaded;
      }
      if (stamp === this.loaded.stamp) return this.loaded;
    }
    this.reloading ??= this.read().finally(() => {
      this.reloading = null;
    });
    this.loaded = await this.reloading;
    return this.loaded;
  }

  /** A page or JSON text built from the current load, built once per load. */
  async built(name: string, build: (loaded: LoadedRun) => string): Promise<string> {
    const loaded = await this.current();
    let text = loaded.built.get(name);
    if (text === undefined) {
      text = build(loaded);
      loaded.built.set(name, text);
    }
    return text;
  }
}
