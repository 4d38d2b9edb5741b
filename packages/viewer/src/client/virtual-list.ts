import { h } from './dom.ts';

export interface VirtualListOptions {
  scroller: HTMLElement;
  count: number;
  /** Estimated height of item i in pixels, until it is measured. */
  estimate: (i: number) => number;
  render: (i: number) => HTMLElement;
  /** Pixels rendered beyond the viewport on each side. */
  overscan?: number;
}

/**
 * A list of variable-height items in a scroll container, rendering only the items near the
 * viewport. Heights start as estimates and are measured (ResizeObserver) once rendered; items
 * above the viewport that change size shift the scroll position so the view does not jump.
 */
export class VirtualList {
  private readonly scroller: HTMLElement;
  private readonly count: number;
  private readonly render: (i: number) => HTMLElement;
  private readonly overscan: number;
  private readonly heights: Float64Array;
  private readonly offsets: Float64Array;
  private dirty = true;
  private readonly live = new Map<number, HTMLElement>();
  private readonly inner: HTMLElement;
  private pending = false;
  private readonly observer: ResizeObserver;
  private readonly onScroll: () => void;

  constructor({ scroller, count, estimate, render, overscan = 900 }: VirtualListOptions) {
    this.scroller = scroller;
    this.count = count;
    this.render = render;
    this.overscan = overscan;
    this.heights = new Float64Array(count);
    for (let i = 0; i < count; i++) this.heights[i] = estimate(i);
    this.offsets = new Float64Array(count + 1);
    this.inner = h('div', { class: 'vlist-inner' });
    scroller.append(this.inner);
    this.observer = new ResizeObserver((entries) => this.measured(entries));
    this.onScroll = () => this.schedule();
    scroller.addEventListener('scroll', this.onScroll, { passive: true });
    this.update();
  }

  private layout(): void {
    const { heights, offsets } = this;
    for (let i = 0; i < this.count; i++) offsets[i + 1] = offsets[i]! + heights[i]!;
    this.inner.style.height = `${offsets[this.count]}px`;
    this.dirty = false;
  }

  /** Largest i with offsets[i] <= y. */
  private find(y: number): number {
    let lo = 0;
    let hi = this.count - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.offsets[mid]! <= y) lo = mid;
      else hi = mid - 1;
    }
    return Math.max(0, lo);
  }

  private measured(entries: ResizeObserverEntry[]): void {
    let changed = false;
    let shift = 0;
    const top = this.scroller.scrollTop;
    for (const entry of entries) {
      const target = entry.target as HTMLElement;
      const i = Number(target.dataset.i);
      if (!this.live.has(i)) continue;
      const height = entry.borderBoxSize?.[0]?.blockSize ?? target.offsetHeight;
      const delta = height - this.heights[i]!;
      if (Math.abs(delta) < 0.5) continue;
      if (this.offsets[i]! + this.heights[i]! <= top) shift += delta;
      this.heights[i] = height;
      changed = true;
    }
    if (!changed) return;
    this.layout();
    if (shift) this.scroller.scrollTop = top + shift;
    this.update();
  }

  private schedule(): void {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.update();
    });
  }

  /** Renders the items near the viewport and drops the others. */
  update(): void {
    if (this.count === 0) return;
    if (this.dirty) this.layout();
    const top = this.scroller.scrollTop;
    const bottom = top + (this.scroller.clientHeight || window.innerHeight);
    const start = this.find(top - this.overscan);
    const end = this.find(bottom + this.overscan);
    for (const [i, el] of this.live) {
      if (i < start || i > end) {
        this.observer.unobserve(el);
        el.remove();
        this.live.delete(i);
      }
    }
    for (let i = start; i <= end; i++) {
      let el = this.live.get(i);
      if (!el) {
        el = this.render(i);
        el.dataset.i = String(i);
        el.classList.add('vlist-item');
        this.inner.append(el);
        this.live.set(i, el);
        this.observer.observe(el);
      }
      const y = `translateY(${this.offsets[i]}px)`;
      if (el.style.transform !== y) el.style.transform = y;
    }
  }

  /** Scrolls item i to the top of the viewport. */
  scrollTo(i: number): void {
    if (this.dirty) this.layout();
    this.scroller.scrollTop = this.offsets[Math.max(0, Math.min(i, this.count - 1))]!;
    this.update();
  }

  destroy(): void {
    this.observer.disconnect();
    this.scroller.removeEventListener('scroll', this.onScroll);
  }
}
