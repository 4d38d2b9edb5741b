// troupe view: the run report's front end. Plain DOM, no dependencies, inlined into the page.
// Data comes from <script type="application/json"> elements: `troupe-index` (summary + one row per
// episode) and, in a static report, `ep-<i>` (one episode record each, parsed only when opened).
// Everything user-provided is written with textContent, never parsed as HTML.
(() => {
  const t0 = performance.now();
  const timings = { indexParseMs: 0, firstRenderMs: 0, episodeMs: 0 };
  window.__troupe = { timings };

  const index = JSON.parse(document.getElementById('troupe-index').textContent);
  const modeInfo = JSON.parse(document.getElementById('troupe-mode').textContent);
  const mode = modeInfo.episodes;
  // Embedded episodes come in gzip + base64 chunks of consecutive episodes; chunkStarts[k] = first row.
  const chunkStarts = [];
  let chunkFirst = 0;
  for (const count of modeInfo.chunks || []) {
    chunkStarts.push(chunkFirst);
    chunkFirst += count;
  }
  timings.indexParseMs = performance.now() - t0;
  const rowsById = new Map(index.episodes.map((row) => [row.id, row]));
  const roleNames = index.roles.map((role) => role.name);
  const roleByName = new Map(index.roles.map((role) => [role.name, role]));

  // ---- small helpers -------------------------------------------------------------------------

  /** Creates an element. `props`: class, text, title, href, style, data-*, on<event>, other attributes. */
  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    if (props) {
      for (const [key, value] of Object.entries(props)) {
        if (value === undefined || value === null || value === false) continue;
        if (key === 'class') el.className = value;
        else if (key === 'text') el.textContent = String(value);
        else if (key === 'style') el.style.cssText = value;
        else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
        else el.setAttribute(key, value === true ? '' : String(value));
      }
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  const SVG = 'http://www.w3.org/2000/svg';
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
    for (const child of children) if (child) el.append(child);
    return el;
  }

  const intFormat = new Intl.NumberFormat('en-US');
  const fmt = {
    int: (n) => (n === null || n === undefined ? '—' : intFormat.format(Math.round(n))),
    num(n, digits = 3) {
      if (n === null || n === undefined || Number.isNaN(n)) return '—';
      if (Number.isInteger(n)) return intFormat.format(n);
      const abs = Math.abs(n);
      if (abs >= 1000) return intFormat.format(Math.round(n));
      return String(Number(n.toFixed(abs >= 100 ? 1 : digits)));
    },
    tokens(n) {
      if (n === null || n === undefined) return '—';
      if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
      if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
      if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
      return intFormat.format(n);
    },
    ms(n) {
      if (n === null || n === undefined) return '—';
      if (n < 1000) return `${Math.round(n)} ms`;
      if (n < 60_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} s`;
      if (n < 3_600_000) return `${Math.floor(n / 60_000)} min ${Math.round((n % 60_000) / 1000)} s`;
      return `${(n / 3_600_000).toFixed(1)} h`;
    },
    cost(n) {
      if (!n) return '—';
      return n < 0.01 ? `$${n.toFixed(5)}` : `$${n.toFixed(2)}`;
    },
    pct: (n) => (n === null || n === undefined ? '—' : `${(n * 100).toFixed(n === 1 || n === 0 ? 0 : 1)}%`),
  };

  const PALETTE = ['#2563eb', '#d97706', '#7c3aed', '#059669', '#db2777', '#0891b2', '#65a30d', '#dc2626'];
  function roleColor(name) {
    const i = roleNames.indexOf(name);
    if (i >= 0) return PALETTE[i % PALETTE.length];
    let hash = 0;
    for (const c of name) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
    return PALETTE[hash % PALETTE.length];
  }

  /** True when every reward of the role lies in [0, 1] (colour scale red → green). */
  function unitRole(name) {
    const role = roleByName.get(name);
    return !role || role.rewardMin === null || (role.rewardMin >= 0 && role.rewardMax <= 1);
  }

  function rewardChip(value, role) {
    if (value === null || value === undefined)
      return h('span', { class: 'reward-chip none', text: '—', title: 'no reward (unscored or errored)' });
    let cls = 'mid';
    if (unitRole(role)) cls = value >= 0.999 ? 'good' : value <= 0.001 ? 'bad' : 'mid';
    else cls = value > 0 ? 'good' : value < 0 ? 'bad' : 'mid';
    return h('span', { class: `reward-chip ${cls}`, text: fmt.num(value) });
  }

  function badge(text, cls, title) {
    return h('span', { class: `badge ${cls || ''}`, text, title });
  }

  function prettyJson(value) {
    try {
      return JSON.stringify(value, null, 2);
    } catch {
      return String(value);
    }
  }

  function jsonDetails(label, value, open) {
    return h(
      'details',
      { class: 'json', open: open || undefined },
      h('summary', { text: label }),
      h('pre', { class: 'code', text: prettyJson(value) }),
    );
  }

  // ---- episode data ----------------------------------------------------------------------------

  const episodeCache = new Map();
  const documentReady = new Promise((resolve) => {
    if (document.readyState !== 'loading') resolve();
    else document.addEventListener('DOMContentLoaded', () => resolve(), { once: true });
  });

  const chunkCache = new Map();

  /** Inflates chunk k (base64 → gzip → JSON lines), keeping the few most recent ones. */
  function readChunk(k) {
    if (chunkCache.has(k)) return chunkCache.get(k);
    const promise = (async () => {
      let el = document.getElementById(`chunk-${k}`);
      if (!el) {
        await documentReady;
        el = document.getElementById(`chunk-${k}`);
      }
      if (!el) throw new Error(`episode chunk ${k} is not embedded in this page`);
      const binary = atob(el.textContent.trim());
      const bytes = new Uint8Array(binary.length);
      for (let j = 0; j < binary.length; j++) bytes[j] = binary.charCodeAt(j);
      const text = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).text();
      return text.split('\n');
    })();
    chunkCache.set(k, promise);
    promise.catch(() => chunkCache.delete(k));
    if (chunkCache.size > 6) chunkCache.delete(chunkCache.keys().next().value);
    return promise;
  }

  function chunkOf(i) {
    let lo = 0;
    let hi = chunkStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (chunkStarts[mid] <= i) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  async function loadEpisode(row) {
    if (episodeCache.has(row.id)) return episodeCache.get(row.id);
    let record;
    if (mode === 'embedded') {
      const k = chunkOf(row.i);
      const lines = await readChunk(k);
      const line = lines[row.i - chunkStarts[k]];
      if (line === undefined) throw new Error(`episode ${row.id} is not embedded in this page`);
      record = JSON.parse(line);
    } else {
      const response = await fetch(`api/episodes/${encodeURIComponent(row.id)}`);
      if (!response.ok) throw new Error(`GET api/episodes/${row.id}: HTTP ${response.status}`);
      record = await response.json();
    }
    if (episodeCache.size > 20) episodeCache.delete(episodeCache.keys().next().value);
    episodeCache.set(row.id, record);
    return record;
  }

  // ---- virtual lists ----------------------------------------------------------------------------

  /**
   * A list of variable-height items in a scroll container, rendering only the items near the
   * viewport. Heights start as estimates and are measured (ResizeObserver) once rendered; items
   * above the viewport that change size shift the scroll position so the view does not jump.
   */
  class VirtualList {
    constructor({ scroller, count, estimate, render, overscan = 900 }) {
      this.scroller = scroller;
      this.count = count;
      this.render = render;
      this.overscan = overscan;
      this.heights = new Float64Array(count);
      for (let i = 0; i < count; i++) this.heights[i] = estimate(i);
      this.offsets = new Float64Array(count + 1);
      this.dirty = true;
      this.live = new Map();
      this.inner = h('div', { class: 'vlist-inner' });
      scroller.append(this.inner);
      this.pending = false;
      this.observer = new ResizeObserver((entries) => this.measured(entries));
      this.onScroll = () => this.schedule();
      scroller.addEventListener('scroll', this.onScroll, { passive: true });
      this.update();
    }

    layout() {
      const { heights, offsets } = this;
      for (let i = 0; i < this.count; i++) offsets[i + 1] = offsets[i] + heights[i];
      this.inner.style.height = `${offsets[this.count]}px`;
      this.dirty = false;
    }

    /** Largest i with offsets[i] <= y. */
    find(y) {
      let lo = 0;
      let hi = this.count - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (this.offsets[mid] <= y) lo = mid;
        else hi = mid - 1;
      }
      return Math.max(0, lo);
    }

    measured(entries) {
      let changed = false;
      let shift = 0;
      const top = this.scroller.scrollTop;
      for (const entry of entries) {
        const i = Number(entry.target.dataset.i);
        if (!this.live.has(i)) continue;
        const height = entry.borderBoxSize?.[0]?.blockSize ?? entry.target.offsetHeight;
        const delta = height - this.heights[i];
        if (Math.abs(delta) < 0.5) continue;
        if (this.offsets[i] + this.heights[i] <= top) shift += delta;
        this.heights[i] = height;
        changed = true;
      }
      if (!changed) return;
      this.layout();
      if (shift) this.scroller.scrollTop = top + shift;
      this.update();
    }

    schedule() {
      if (this.pending) return;
      this.pending = true;
      requestAnimationFrame(() => {
        this.pending = false;
        this.update();
      });
    }

    update() {
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
    scrollTo(i) {
      if (this.dirty) this.layout();
      this.scroller.scrollTop = this.offsets[Math.max(0, Math.min(i, this.count - 1))];
      this.update();
    }

    destroy() {
      this.observer.disconnect();
      this.scroller.removeEventListener('scroll', this.onScroll);
    }
  }

  // ---- shell ---------------------------------------------------------------------------------------

  const app = document.getElementById('app');
  const crumbs = h('nav', { class: 'crumbs' });
  const topbar = h(
    'header',
    { class: 'topbar' },
    h(
      'a',
      { class: 'brand', href: '#', title: 'Run summary and episodes' },
      h('span', { class: 'brand-mark', text: '◆' }),
      'troupe',
    ),
    h('span', { class: 'run-name', text: index.run.name, title: 'run directory' }),
    crumbs,
    h('span', { class: 'spacer' }),
    h('span', {
      class: 'topbar-meta',
      text: `${fmt.int(index.totals.episodes)} episodes · ${index.run.envs.join(', ') || 'no env'}`,
    }),
  );
  const runView = h('main', { class: 'view run-view' });
  const episodeView = h('main', { class: 'view episode-view', hidden: true });
  app.append(topbar, runView, episodeView);

  // ---- run summary -------------------------------------------------------------------------------

  function histogramSvg(hist, color) {
    const width = 300;
    const height = 56;
    const max = Math.max(1, ...hist.counts);
    const n = hist.counts.length;
    const barW = width / n;
    const svg = s('svg', {
      class: 'hist',
      viewBox: `0 0 ${width} ${height + 1}`,
      preserveAspectRatio: 'none',
      role: 'img',
      'aria-label': 'reward histogram',
    });
    hist.counts.forEach((c, i) => {
      const lo = hist.min + ((hist.max - hist.min) * i) / n;
      const hi = hist.min + ((hist.max - hist.min) * (i + 1)) / n;
      const barH = c ? Math.max(2, (c / max) * (height - 2)) : 0;
      const rect = s('rect', {
        x: i * barW + 1.5,
        y: height - barH,
        width: Math.max(1, barW - 3),
        height: barH,
        rx: 2,
        fill: color,
      });
      rect.append(s('title', {}, document.createTextNode(`${fmt.num(lo)} – ${fmt.num(hi)}: ${c}`)));
      svg.append(rect);
    });
    svg.append(s('line', { x1: 0, x2: width, y1: height + 0.5, y2: height + 0.5, class: 'axis' }));
    return h(
      'div',
      { class: 'hist-wrap' },
      svg,
      h(
        'div',
        { class: 'hist-axis' },
        h('span', { text: fmt.num(hist.min) }),
        h('span', { class: 'muted', text: 'reward distribution' }),
        h('span', { text: fmt.num(hist.max) }),
      ),
    );
  }

  function barList(entries, total, cls) {
    return h(
      'div',
      { class: 'bar-list' },
      entries.map(([label, count]) =>
        h(
          'div',
          { class: 'bar-row', title: `${label}: ${count}` },
          h('span', { class: 'bar-label', text: label }),
          h(
            'span',
            { class: 'bar-track' },
            h('span', { class: `bar-fill ${cls || ''}`, style: `width:${total ? (100 * count) / total : 0}%` }),
          ),
          h('span', { class: 'bar-count', text: fmt.int(count) }),
        ),
      ),
    );
  }

  function kpi(label, value, sub, cls) {
    return h(
      'div',
      { class: `kpi ${cls || ''}` },
      h('div', { class: 'kpi-label', text: label }),
      h('div', { class: 'kpi-value', text: value }),
      sub ? h('div', { class: 'kpi-sub', text: sub }) : null,
    );
  }

  function roleCard(role) {
    const color = roleColor(role.name);
    const stops = Object.entries(role.stopConditions).sort((a, b) => b[1] - a[1]);
    const metrics = role.metrics;
    return h(
      'section',
      { class: 'card role-card', 'data-role': role.name },
      h(
        'div',
        { class: 'card-head' },
        h('span', { class: 'role-dot', style: `background:${color}` }),
        h('h3', { text: role.name }),
        badge(role.trainable ? 'trainable' : 'frozen', role.trainable ? 'trainable' : 'frozen'),
        h('span', { class: 'spacer' }),
        h('span', {
          class: 'muted small',
          text: [role.models.join(', '), role.harnesses.join(', ')].filter(Boolean).join(' · '),
        }),
      ),
      h(
        'div',
        { class: 'role-body' },
        h(
          'div',
          { class: 'role-stat' },
          h('div', { class: 'big', text: fmt.num(role.rewardMean) }),
          h('div', {
            class: 'muted small',
            text: role.rewardStd === null ? 'mean reward' : `mean reward · σ ${fmt.num(role.rewardStd)}`,
          }),
          h('div', { class: 'muted small', text: `${fmt.int(role.scored)} scored of ${fmt.int(role.traces)} traces` }),
          role.errored ? h('div', { class: 'small err-text', text: `${fmt.int(role.errored)} errored (not counted)` }) : null,
        ),
        role.histogram
          ? histogramSvg(role.histogram, color)
          : h('div', { class: 'muted small no-hist', text: 'not scored: no rewards recorded' }),
      ),
      role.passAtK.length
        ? h(
            'div',
            { class: 'chips' },
            h('span', { class: 'chips-label', text: 'pass@k' }),
            role.passAtK.map((p) =>
              h(
                'span',
                { class: 'chip', title: `over ${p.tasks} tasks (reward = 1 passes)` },
                h('b', { text: `@${p.k}` }),
                ` ${fmt.pct(p.value)}`,
              ),
            ),
          )
        : null,
      role.rewardParts.length
        ? h(
            'div',
            { class: 'chips' },
            h('span', { class: 'chips-label', text: 'rewards' }),
            role.rewardParts.map((p) =>
              h(
                'span',
                { class: 'chip', title: `mean score over ${p.n} traces, weight ${p.weight}` },
                h('b', { text: p.name }),
                ` ${fmt.num(p.mean)} ×${fmt.num(p.weight)}`,
              ),
            ),
          )
        : null,
      metrics.length
        ? h(
            'div',
            { class: 'chips' },
            h('span', { class: 'chips-label', text: 'metrics' }),
            metrics
              .slice(0, 12)
              .map((m) =>
                h('span', { class: 'chip', title: `mean over ${m.n} traces` }, h('b', { text: m.name }), ` ${fmt.num(m.mean)}`),
              ),
          )
        : null,
      h(
        'div',
        { class: 'role-foot small' },
        h('span', { class: 'muted', text: 'tokens ' }),
        `${fmt.tokens(role.tokens.prompt)} in · ${fmt.tokens(role.tokens.completion)} out${role.tokens.cost ? ` · ${fmt.cost(role.tokens.cost)}` : ''}`,
        h('span', { class: 'muted', text: ' · turns ' }),
        `${fmt.num(role.turnsMean, 1)} / trace`,
      ),
      barList(stops, role.traces, 'stop'),
    );
  }

  function renderSummary() {
    const { totals } = index;
    const wrap = h('div', { class: 'summary' });
    if (index.run.warnings.length) {
      wrap.append(
        h(
          'div',
          { class: 'warnings', role: 'alert' },
          h('b', {
            text: `${index.run.warnings.length} warning${index.run.warnings.length > 1 ? 's' : ''} while reading the run`,
          }),
          h(
            'ul',
            {},
            index.run.warnings.slice(0, 20).map((w) => h('li', { text: w })),
          ),
        ),
      );
    }
    const okShare = totals.episodes ? totals.okEpisodes / totals.episodes : null;
    wrap.append(
      h(
        'div',
        { class: 'kpis' },
        kpi('Episodes', fmt.int(totals.episodes), `${fmt.pct(okShare)} ok · ${fmt.int(totals.tasks)} tasks`),
        kpi('Traces', fmt.int(totals.traces), `${roleNames.length} role${roleNames.length === 1 ? '' : 's'}`),
        kpi(
          'Model calls',
          fmt.int(totals.calls),
          totals.failedCalls ? `${fmt.int(totals.failedCalls)} failed` : 'none failed',
          totals.failedCalls ? 'warn' : '',
        ),
        kpi(
          'Tokens',
          fmt.tokens(totals.tokens.prompt + totals.tokens.completion),
          `${fmt.tokens(totals.tokens.prompt)} in · ${fmt.tokens(totals.tokens.completion)} out${totals.tokens.cached ? ` · ${fmt.tokens(totals.tokens.cached)} cached` : ''}`,
        ),
        kpi(
          'Cost',
          fmt.cost(totals.tokens.cost),
          totals.tokens.costedCalls ? `${fmt.int(totals.tokens.costedCalls)} priced calls` : 'not reported',
        ),
        kpi(
          'Errors',
          fmt.int(index.errors.reduce((a, e) => a + e.count, 0)),
          index.errors.length
            ? index.errors
                .map((e) => e.type)
                .slice(0, 3)
                .join(', ')
            : 'none',
          index.errors.length ? 'bad' : 'good',
        ),
        kpi('Wall time', fmt.ms(totals.wallMs), `${fmt.ms(totals.episodeMsMean)} / episode`),
      ),
    );
    wrap.append(h('div', { class: 'role-grid' }, index.roles.map(roleCard)));
    const stopEntries = Object.entries(index.stopConditions).sort((a, b) => b[1] - a[1]);
    const stopTotal = stopEntries.reduce((a, [, c]) => a + c, 0);
    wrap.append(
      h(
        'div',
        { class: 'row-grid' },
        h(
          'section',
          { class: 'card errors-card' },
          h('div', { class: 'card-head' }, h('h3', { text: 'Errors by type' })),
          index.errors.length
            ? h(
                'table',
                { class: 'mini-table' },
                h(
                  'thead',
                  {},
                  h(
                    'tr',
                    {},
                    h('th', { text: 'type' }),
                    h('th', { text: 'count', class: 'num' }),
                    h('th', { text: 'stages' }),
                    h('th', { text: 'example' }),
                  ),
                ),
                h(
                  'tbody',
                  {},
                  index.errors.map((e) =>
                    h(
                      'tr',
                      {},
                      h(
                        'td',
                        {},
                        h('a', {
                          href: '#',
                          class: 'err-type',
                          text: e.type,
                          onclick: (ev) => {
                            ev.preventDefault();
                            applyFilter({ error: e.type });
                          },
                        }),
                      ),
                      h('td', { class: 'num', text: fmt.int(e.count) }),
                      h('td', {
                        class: 'muted',
                        text: Object.entries(e.stages)
                          .map(([k, v]) => `${k} ${v}`)
                          .join(', '),
                      }),
                      h('td', { class: 'example', text: e.example, title: e.example }),
                    ),
                  ),
                ),
              )
            : h('p', { class: 'muted', text: 'No errors.' }),
        ),
        h(
          'section',
          { class: 'card' },
          h('div', { class: 'card-head' }, h('h3', { text: 'Stop conditions' })),
          barList(stopEntries, stopTotal, 'stop'),
        ),
        h(
          'section',
          { class: 'card' },
          h('div', { class: 'card-head' }, h('h3', { text: 'Run files' })),
          index.run.config
            ? jsonDetails('config.json (resolved config)', index.run.config)
            : h('p', { class: 'muted', text: 'No config.json.' }),
          index.run.summary
            ? jsonDetails('summary.json', index.run.summary)
            : h('p', { class: 'muted', text: 'No summary.json.' }),
        ),
      ),
    );
    return wrap;
  }

  // ---- episode table ---------------------------------------------------------------------------

  const ROW_HEIGHT = 34;
  const errorTypes = index.errors.map((e) => e.type);
  const stopNames = Object.keys(index.stopConditions).sort();
  const filters = { text: '', role: '', min: '', max: '', error: '', stop: '' };
  const sort = { key: 'i', dir: 1 };
  let visibleRows = index.episodes;

  const columns = [
    {
      key: 'i',
      label: '#',
      width: '64px',
      num: true,
      value: (r) => r.i,
      cell: (r) => h('span', { class: 'muted', text: r.i + 1 }),
    },
    {
      key: 'task',
      label: 'task',
      width: 'minmax(160px, 1.6fr)',
      value: (r) => r.task,
      cell: (r) =>
        h(
          'span',
          { class: 'task-cell', title: `${r.task}\n${r.id}` },
          h('span', { class: 'task-key', text: r.task }),
          h('span', { class: 'muted id-sub', text: r.id }),
        ),
    },
    {
      key: 'env',
      label: 'env',
      width: 'minmax(110px, 0.8fr)',
      value: (r) => r.env,
      cell: (r) => h('span', { class: 'muted', text: r.env }),
    },
    {
      key: 'group',
      label: 'rollout',
      width: '70px',
      num: true,
      value: (r) => r.group,
      cell: (r) => h('span', { text: r.group }),
    },
    ...roleNames.map((name) => ({
      key: `r:${name}`,
      label: name,
      role: name,
      width: '92px',
      num: true,
      value: (r) => (r.rewards[name] === undefined ? null : r.rewards[name]),
      cell: (r) => (name in r.rewards ? rewardChip(r.rewards[name], name) : h('span', { class: 'muted faint', text: '' })),
    })),
    {
      key: 'ok',
      label: 'ok',
      width: '54px',
      value: (r) => (r.ok ? 1 : 0),
      cell: (r) => h('span', { class: r.ok ? 'ok-mark' : 'err-mark', text: r.ok ? '✓' : '✕', title: r.ok ? 'ok' : 'failed' }),
    },
    {
      key: 'errors',
      label: 'errors',
      width: 'minmax(120px, 1fr)',
      value: (r) => r.errors.join(','),
      cell: (r) =>
        h(
          'span',
          { class: 'err-list' },
          r.errors.map((e) => badge(e, 'err')),
        ),
    },
    {
      key: 'turns',
      label: 'turns',
      width: '64px',
      num: true,
      value: (r) => r.turns,
      cell: (r) => h('span', { text: fmt.int(r.turns) }),
    },
    {
      key: 'tokens',
      label: 'tokens',
      width: '78px',
      num: true,
      value: (r) => r.tokens,
      cell: (r) => h('span', { text: fmt.tokens(r.tokens) }),
    },
    {
      key: 'duration',
      label: 'time',
      width: '78px',
      num: true,
      value: (r) => r.durationMs,
      cell: (r) => h('span', { class: 'muted', text: fmt.ms(r.durationMs) }),
    },
    {
      key: 'stop',
      label: 'stop',
      width: 'minmax(110px, 0.9fr)',
      value: (r) => r.stops.join(','),
      cell: (r) => h('span', { class: 'muted small', text: r.stops.join(', ') }),
    },
  ];
  const gridTemplate = columns.map((c) => c.width).join(' ');

  const tableCount = h('span', { class: 'table-count' });
  const headRow = h('div', { class: 'trow thead', style: `grid-template-columns:${gridTemplate}` });
  const tableBody = h('div', { class: 'tbody', tabindex: 0 });
  const tableInner = h('div', { class: 'tbody-inner' });
  const tableWindow = h('div', { class: 'tbody-window' });
  tableInner.append(tableWindow);
  tableBody.append(tableInner);
  const emptyNote = h('div', { class: 'table-empty', hidden: true, text: 'No episode matches these filters.' });

  function renderHead() {
    headRow.replaceChildren(
      ...columns.map((col) =>
        h(
          'button',
          {
            class: `th ${col.num ? 'num' : ''} ${sort.key === col.key ? 'sorted' : ''}`,
            'data-key': col.key,
            title: col.role ? `reward of ${col.role} (mean over its traces); click to sort` : 'click to sort',
            onclick: () => {
              if (sort.key === col.key) sort.dir = -sort.dir;
              else {
                sort.key = col.key;
                sort.dir = col.num || col.role ? -1 : 1;
                if (col.key === 'i') sort.dir = 1;
              }
              refreshTable();
            },
          },
          col.role ? h('span', { class: 'role-dot', style: `background:${roleColor(col.role)}` }) : null,
          col.label,
          sort.key === col.key ? h('span', { class: 'sort-arrow', text: sort.dir > 0 ? ' ▲' : ' ▼' }) : null,
        ),
      ),
    );
  }

  /** Everything the free-text filter searches, built on first use. */
  const searchTexts = new Map();
  function searchText(row) {
    let text = searchTexts.get(row);
    if (text === undefined) {
      text = [row.id, row.env, row.task, ...Object.keys(row.rewards), ...row.errors, row.text].join(' ').toLowerCase();
      searchTexts.set(row, text);
    }
    return text;
  }

  function matches(row) {
    if (filters.role && !(filters.role in row.rewards)) return false;
    if (filters.error === '__none') {
      if (row.errors.length) return false;
    } else if (filters.error === '__any') {
      if (row.ok) return false;
    } else if (filters.error && !row.errors.includes(filters.error)) return false;
    if (filters.stop && !row.stops.includes(filters.stop)) return false;
    const min = filters.min === '' ? null : Number(filters.min);
    const max = filters.max === '' ? null : Number(filters.max);
    if (min !== null || max !== null) {
      const values = filters.role ? [row.rewards[filters.role]] : Object.values(row.rewards);
      const inRange = values.some(
        (v) => v !== null && v !== undefined && (min === null || v >= min) && (max === null || v <= max),
      );
      if (!inRange) return false;
    }
    if (filters.text) {
      const words = filters.text.toLowerCase().split(/\s+/).filter(Boolean);
      const text = searchText(row);
      for (const word of words) if (!text.includes(word)) return false;
    }
    return true;
  }

  function refreshTable() {
    const col = columns.find((c) => c.key === sort.key) || columns[0];
    const rows = index.episodes.filter(matches);
    const dir = sort.dir;
    const keyed = rows.map((row) => [col.value(row), row]);
    keyed.sort((a, b) => {
      const x = a[0];
      const y = b[0];
      if (x === y) return a[1].i - b[1].i;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      if (typeof x === 'string') return dir * x.localeCompare(y);
      return dir * (x - y);
    });
    visibleRows = keyed.map((k) => k[1]);
    tableCount.textContent =
      visibleRows.length === index.episodes.length
        ? `${fmt.int(visibleRows.length)} episodes`
        : `${fmt.int(visibleRows.length)} of ${fmt.int(index.episodes.length)} episodes`;
    tableInner.style.height = `${visibleRows.length * ROW_HEIGHT}px`;
    emptyNote.hidden = visibleRows.length > 0;
    renderHead();
    tableBody.scrollTop = 0;
    renderRows(true);
  }

  let rowsPending = false;
  let renderedRange = '';
  function renderRows(force) {
    const top = tableBody.scrollTop;
    const height = tableBody.clientHeight || 600;
    const start = Math.max(0, Math.floor(top / ROW_HEIGHT) - 8);
    const end = Math.min(visibleRows.length, Math.ceil((top + height) / ROW_HEIGHT) + 8);
    const range = `${start}:${end}`;
    if (!force && range === renderedRange) return;
    renderedRange = range;
    tableWindow.style.transform = `translateY(${start * ROW_HEIGHT}px)`;
    const out = [];
    for (let k = start; k < end; k++) {
      const row = visibleRows[k];
      out.push(
        h(
          'a',
          {
            class: `trow ${row.ok ? '' : 'failed'} ${k % 2 ? 'odd' : ''}`,
            href: `#episode=${encodeURIComponent(row.id)}`,
            'data-id': row.id,
            style: `grid-template-columns:${gridTemplate}`,
          },
          columns.map((c) => h('span', { class: `td ${c.num ? 'num' : ''}` }, c.cell(row))),
        ),
      );
    }
    tableWindow.replaceChildren(...out);
  }
  tableBody.addEventListener(
    'scroll',
    () => {
      if (rowsPending) return;
      rowsPending = true;
      requestAnimationFrame(() => {
        rowsPending = false;
        renderRows(false);
      });
    },
    { passive: true },
  );
  window.addEventListener('resize', () => renderRows(true));

  const controls = {};
  function select(name, label, options) {
    const el = h(
      'select',
      {
        name,
        'aria-label': label,
        onchange: () => {
          filters[name] = el.value;
          refreshTable();
        },
      },
      options.map(([value, text]) => h('option', { value, text })),
    );
    controls[name] = el;
    return h('label', { class: 'field' }, h('span', { text: label }), el);
  }
  function input(name, label, attrs) {
    let timer = 0;
    const el = h('input', {
      name,
      'aria-label': label,
      ...attrs,
      oninput: () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          filters[name] = el.value.trim();
          refreshTable();
        }, 120);
      },
    });
    controls[name] = el;
    return h('label', { class: `field ${attrs.type === 'number' ? 'narrow' : 'grow'}` }, h('span', { text: label }), el);
  }

  /** Sets filters (from the summary's links) and scrolls to the table. */
  function applyFilter(next) {
    Object.assign(filters, next);
    for (const [key, value] of Object.entries(next)) if (controls[key]) controls[key].value = value;
    refreshTable();
    tableSection.scrollIntoView({ block: 'start' });
  }

  const filterBar = h(
    'div',
    { class: 'filters' },
    input('text', 'Search', { type: 'search', placeholder: 'task, episode id, error message…' }),
    select('role', 'Role', [['', 'all roles'], ...roleNames.map((r) => [r, r])]),
    input('min', 'Reward ≥', { type: 'number', step: 'any', placeholder: 'min' }),
    input('max', 'Reward ≤', { type: 'number', step: 'any', placeholder: 'max' }),
    select('error', 'Errors', [
      ['', 'any'],
      ['__none', 'no errors'],
      ['__any', 'failed episodes'],
      ...errorTypes.map((e) => [e, e]),
    ]),
    select('stop', 'Stop condition', [['', 'any'], ...stopNames.map((e) => [e, e])]),
    h('button', {
      class: 'btn clear',
      text: 'Clear',
      onclick: () => {
        for (const key of Object.keys(filters)) {
          filters[key] = '';
          if (controls[key]) controls[key].value = '';
        }
        refreshTable();
      },
    }),
  );

  const tableSection = h(
    'section',
    { class: 'card table-card' },
    h(
      'div',
      { class: 'card-head' },
      h('h3', { text: 'Episodes' }),
      tableCount,
      h('span', { class: 'spacer' }),
      h('span', { class: 'muted small', text: 'Click a row to open the episode · sort by clicking a column' }),
    ),
    filterBar,
    h('div', { class: 'table' }, headRow, tableBody, emptyNote),
  );

  runView.append(renderSummary(), tableSection);

  // ---- episode view -------------------------------------------------------------------------------

  let currentLists = [];

  function contentToText(content) {
    if (content === null || content === undefined) return '';
    if (typeof content === 'string') return content;
    return content
      .map((part) =>
        part.type === 'text'
          ? part.text
          : `[image${part.mediaType ? ` ${part.mediaType}` : ''}: ${String(part.url).slice(0, 80)}]`,
      )
      .join('\n\n');
  }

  const CLAMP = 2400;
  function textBlock(text, cls) {
    const el = h('div', { class: `text ${cls || ''}` });
    if (text.length <= CLAMP) {
      el.textContent = text;
      return el;
    }
    const body = h('span', { text: `${text.slice(0, CLAMP)}…` });
    const more = h('button', {
      class: 'btn link',
      text: `show all ${fmt.int(text.length)} characters`,
      onclick: () => {
        const open = more.dataset.open === '1';
        body.textContent = open ? `${text.slice(0, CLAMP)}…` : text;
        more.textContent = open ? `show all ${fmt.int(text.length)} characters` : 'show less';
        more.dataset.open = open ? '0' : '1';
      },
    });
    el.append(body, h('div', {}, more));
    return el;
  }

  function toolArguments(raw) {
    try {
      const value = JSON.parse(raw);
      if (value && typeof value === 'object' && !Array.isArray(value)) {
        const keys = Object.keys(value);
        if (keys.length === 1 && typeof value[keys[0]] === 'string') return { label: keys[0], text: value[keys[0]] };
      }
      return { label: 'arguments', text: JSON.stringify(value, null, 2) };
    } catch {
      return { label: 'arguments (not JSON)', text: raw };
    }
  }

  function callMeta(call, number) {
    if (!call) return null;
    const usage = call.usage;
    const parts = [`call ${number}`, fmt.ms(call.durationMs)];
    if (usage) {
      let tok = `${fmt.int(usage.promptTokens)} → ${fmt.int(usage.completionTokens)} tok`;
      if (usage.cachedInputTokens) tok += ` (${fmt.int(usage.cachedInputTokens)} cached)`;
      if (usage.reasoningTokens) tok += ` · ${fmt.int(usage.reasoningTokens)} reasoning`;
      parts.push(tok);
      if (usage.cost) parts.push(fmt.cost(usage.cost));
    }
    if (call.finishReason) parts.push(call.finishReason);
    return h('span', {
      class: `call-meta ${call.finishReason === 'length' ? 'warn-text' : ''}`,
      title: `${call.model} · ${call.dialect} · sampling ${JSON.stringify(call.sampling)}`,
      text: parts.join(' · '),
    });
  }

  /** The items shown in one trace's column: its nodes in order, with failed calls after their prompt. */
  function traceItems(trace) {
    const callByNode = new Map();
    const failedAfter = new Map();
    trace.calls.forEach((call, k) => {
      if (call.node !== undefined && call.node !== null) callByNode.set(call.node, { call, number: k + 1 });
      else {
        const key = call.promptNode ?? -1;
        if (!failedAfter.has(key)) failedAfter.set(key, []);
        failedAfter.get(key).push({ call, number: k + 1 });
      }
    });
    const toolNames = new Map();
    for (const node of trace.nodes) for (const tc of node.message.toolCalls || []) toolNames.set(tc.id, tc.name);
    const items = [];
    for (const failed of failedAfter.get(-1) || []) items.push({ kind: 'failed', ...failed });
    let previous = null;
    for (const node of trace.nodes) {
      items.push({
        kind: 'node',
        node,
        branch: node.parent !== null && node.parent !== previous,
        call: callByNode.get(node.id),
        toolNames,
      });
      previous = node.id;
      for (const failed of failedAfter.get(node.id) || []) items.push({ kind: 'failed', ...failed });
    }
    return items;
  }

  function estimateItem(item) {
    if (item.kind === 'failed') return 70;
    const m = item.node.message;
    let chars = contentToText(m.content).length;
    for (const tc of m.toolCalls || []) chars += tc.arguments.length + 40;
    const lines = Math.min(60, Math.ceil(Math.min(chars, CLAMP) / 60) + (contentToText(m.content).match(/\n/g) || []).length);
    return 48 + lines * 20 + (m.reasoning ? 30 : 0);
  }

  function renderItem(item) {
    if (item.kind === 'failed') {
      const { call, number } = item;
      return h(
        'div',
        { class: 'msg failed-call' },
        h(
          'div',
          { class: 'msg-head' },
          h('span', { class: 'role-tag', text: 'model call failed' }),
          h('span', { class: 'spacer' }),
          callMeta(call, number),
        ),
        h(
          'div',
          { class: 'text' },
          h('b', { text: call.error ? call.error.type : 'Error' }),
          call.error?.statusCode ? ` (HTTP ${call.error.statusCode})` : '',
          `: ${call.error ? call.error.message : 'unknown'}`,
        ),
      );
    }
    const { node, call } = item;
    const m = node.message;
    const role = m.role;
    const isError = role === 'tool' && m.isError;
    const el = h('div', { class: `msg role-${role} ${isError ? 'tool-error' : ''}`, 'data-node': node.id });
    const head = h(
      'div',
      { class: 'msg-head' },
      h('span', { class: 'role-tag', text: role === 'tool' ? 'tool result' : role }),
      role === 'tool'
        ? h('span', { class: 'tool-ref', text: `${item.toolNames.get(m.toolCallId) || '?'} · ${m.toolCallId}` })
        : null,
      isError ? badge('error', 'err') : null,
      h('span', { class: 'node-id', text: `#${node.id}`, title: `node ${node.id}, parent ${node.parent}` }),
      item.branch
        ? h('span', {
            class: 'branch',
            text: `↳ from #${node.parent}`,
            title: 'this node continues an earlier message, not the one above (a new branch)',
          })
        : null,
      node.sampled && node.tokenIds
        ? h('span', {
            class: 'muted small',
            text: `${fmt.int(node.mask ? node.mask.filter(Boolean).length : node.tokenIds.length)} sampled tokens`,
          })
        : null,
      h('span', { class: 'spacer' }),
      call ? callMeta(call.call, call.number) : null,
    );
    el.append(head);
    if (role === 'assistant' && m.reasoning) {
      el.append(
        h(
          'details',
          { class: 'reasoning' },
          h('summary', { text: `Reasoning · ${fmt.int(m.reasoning.length)} characters` }),
          textBlock(m.reasoning, 'reasoning-text'),
        ),
      );
    }
    const text = contentToText(m.content);
    if (text) el.append(textBlock(text, role === 'tool' ? 'mono' : ''));
    else if (role === 'tool') el.append(h('div', { class: 'text muted small', text: '(empty output)' }));
    for (const tc of m.toolCalls || []) {
      const args = toolArguments(tc.arguments);
      el.append(
        h(
          'div',
          { class: 'tool-call' },
          h(
            'div',
            { class: 'tool-call-head' },
            h('span', { class: 'tool-icon', text: '▶' }),
            h('b', { text: tc.name }),
            h('span', { class: 'muted small', text: ` ${tc.id}` }),
            h('span', { class: 'spacer' }),
            h('span', { class: 'muted small', text: args.label }),
          ),
          h('pre', { class: 'code', text: args.text }),
        ),
      );
    }
    return el;
  }

  function verdictList(verdicts, metrics) {
    return h(
      'ul',
      { class: 'verdicts' },
      verdicts.map((v) => {
        const score = metrics ? metrics[`judge/${v.name}`] : undefined;
        const positive = /^(yes|true|pass|correct|solved)$/i.test(String(v.verdict));
        const negative = /^(no|false|fail|incorrect|wrong)$/i.test(String(v.verdict));
        return h(
          'li',
          { class: 'verdict' },
          h(
            'div',
            { class: 'verdict-head' },
            h('b', { text: v.name }),
            h('span', { class: `verdict-tag ${positive ? 'good' : negative ? 'bad' : 'mid'}`, text: String(v.verdict) }),
            score !== undefined && score !== null ? h('span', { class: 'muted small', text: `score ${fmt.num(score)}` }) : null,
          ),
          h('div', { class: 'verdict-reason', text: v.reason || '' }),
        );
      }),
    );
  }

  function traceHeader(trace, episode) {
    const color = roleColor(trace.agent.name);
    const reward = (() => {
      let total = 0;
      let any = false;
      for (const r of Object.values(trace.rewards)) {
        if (!r) continue;
        total += r.score * r.weight;
        any = true;
      }
      return any ? total : null;
    })();
    let prompt = 0;
    let completion = 0;
    let cached = 0;
    let reasoning = 0;
    let cost = 0;
    let modelMs = 0;
    for (const call of trace.calls) {
      modelMs += call.durationMs;
      if (!call.usage) continue;
      prompt += call.usage.promptTokens;
      completion += call.usage.completionTokens;
      cached += call.usage.cachedInputTokens || 0;
      reasoning += call.usage.reasoningTokens || 0;
      cost += call.usage.cost || 0;
    }
    for (const u of trace.extraUsage || []) {
      prompt += u.promptTokens;
      completion += u.completionTokens;
      cost += u.cost || 0;
    }
    const turns = trace.nodes.filter((n) => n.sampled).length;
    const card = h('div', { class: 'trace-head', style: `--role:${color}` });
    card.append(
      h(
        'div',
        { class: 'trace-title' },
        h('span', { class: 'role-dot', style: `background:${color}` }),
        h('h3', { text: trace.agent.name }),
        badge(trace.agent.trainable ? 'trainable' : 'frozen', trace.agent.trainable ? 'trainable' : 'frozen'),
        trace.ok ? badge('ok', 'ok') : badge('error', 'err'),
        h('span', { class: 'spacer' }),
        h(
          'span',
          { class: 'reward-big', title: 'trace reward = Σ score × weight' },
          h('span', { class: 'muted small', text: 'reward ' }),
          rewardChip(reward, trace.agent.name),
        ),
      ),
      h('div', {
        class: 'muted small trace-sub',
        text: [
          trace.agent.model,
          trace.agent.harness && `harness ${trace.agent.harness}`,
          trace.agent.runtime && `runtime ${trace.agent.runtime}`,
          `stop: ${trace.stopCondition ?? 'none'}`,
        ]
          .filter(Boolean)
          .join(' · '),
      }),
    );
    if (trace.errors.length) {
      card.append(
        h(
          'div',
          { class: 'trace-errors' },
          trace.errors.map((e) =>
            h(
              'div',
              { class: 'trace-error' },
              h('b', { text: e.type }),
              e.stage ? h('span', { class: 'muted', text: ` [${e.stage}]` }) : null,
              `: ${e.message}`,
            ),
          ),
        ),
      );
    }
    const rewardEntries = Object.entries(trace.rewards);
    if (rewardEntries.length) {
      card.append(
        h(
          'div',
          { class: 'chips' },
          h('span', { class: 'chips-label', text: 'rewards' }),
          rewardEntries.map(([name, r]) =>
            h(
              'span',
              { class: 'chip', 'data-reward': name, title: r ? `score ${r.score} × weight ${r.weight}` : 'not scored (null)' },
              h('b', { text: name }),
              r ? ` ${fmt.num(r.score)}` : ' null',
              r ? h('span', { class: 'muted', text: ` ×${fmt.num(r.weight)}` }) : null,
            ),
          ),
        ),
      );
    }
    // The judge's verdicts: on the judge's own column, and beside the trace it judged. A judged
    // trace carries a copy of the verdict naming the judge's trace (`judgeTrace`): that copy is
    // about this trace, not written by it.
    const verdictInfo = trace.info?.verdict && Array.isArray(trace.info.verdict.verdicts) ? trace.info.verdict : null;
    const aboutThis = verdictInfo?.judgeTrace && verdictInfo.judgeTrace !== trace.id;
    if (verdictInfo && aboutThis) {
      const judge = episode.traces.find((t) => t.id === verdictInfo.judgeTrace);
      card.append(
        h(
          'div',
          { class: 'section verdict-box', 'data-testid': 'verdicts-beside' },
          h('div', { class: 'section-label', text: `Verdicts on this trace, by ${judge ? judge.agent.name : 'the judge'}` }),
          verdictList(verdictInfo.verdicts, trace.metrics),
        ),
      );
    } else if (verdictInfo) {
      card.append(
        h(
          'div',
          { class: 'section verdict-box own', 'data-testid': 'judge-verdicts' },
          h('div', { class: 'section-label', text: 'Verdicts written by this judge' }),
          verdictList(verdictInfo.verdicts, null),
        ),
      );
    } else {
      const judgeMetrics = Object.keys(trace.metrics).filter((k) => k.startsWith('judge/'));
      const judges = episode.traces.filter(
        (t) =>
          t !== trace &&
          t.info &&
          t.info.verdict &&
          Array.isArray(t.info.verdict.verdicts) &&
          (!t.info.verdict.judgeTrace || t.info.verdict.judgeTrace === t.id),
      );
      if (judges.length && (judgeMetrics.length || episode.traces.length === 2)) {
        for (const judge of judges) {
          card.append(
            h(
              'div',
              { class: 'section verdict-box', 'data-testid': 'verdicts-beside' },
              h('div', { class: 'section-label', text: `Verdicts on this trace, by ${judge.agent.name}` }),
              verdictList(judge.info.verdict.verdicts, trace.metrics),
            ),
          );
        }
      }
    }
    const metricEntries = Object.entries(trace.metrics);
    if (metricEntries.length) {
      card.append(
        h(
          'div',
          { class: 'chips' },
          h('span', { class: 'chips-label', text: 'metrics' }),
          metricEntries.map(([k, v]) => h('span', { class: 'chip', 'data-metric': k }, h('b', { text: k }), ` ${fmt.num(v)}`)),
        ),
      );
    }
    const timing = Object.entries(trace.timing || {}).filter(([, v]) => typeof v === 'number');
    const failedCalls = trace.calls.filter((c) => c.error).length;
    const usageParts = [
      `${fmt.int(turns)} turn${turns === 1 ? '' : 's'}`,
      `${fmt.int(trace.calls.length)} call${trace.calls.length === 1 ? '' : 's'}${failedCalls ? ` (${failedCalls} failed)` : ''}`,
      `${fmt.int(prompt)} in · ${fmt.int(completion)} out tokens${cached ? ` · ${fmt.int(cached)} cached` : ''}${reasoning ? ` · ${fmt.int(reasoning)} reasoning` : ''}`,
      cost ? fmt.cost(cost) : null,
      `model ${fmt.ms(modelMs)}`,
      trace.endedAt ? `wall ${fmt.ms(trace.endedAt - trace.startedAt)}` : null,
    ].filter(Boolean);
    card.append(
      h(
        'div',
        {
          class: 'usage-line',
          title: timing.length
            ? `stages: ${timing.map(([k, v]) => `${k} ${fmt.ms(v)}`).join(', ')}`
            : "usage summed over this trace's model calls",
        },
        h('span', { class: 'chips-label', text: 'usage' }),
        usageParts.join(' · '),
      ),
    );
    const info = Object.fromEntries(Object.entries(trace.info || {}).filter(([k]) => k !== 'verdict'));
    if (Object.keys(info).length) {
      const compact = JSON.stringify(info);
      card.append(
        compact.length <= 110
          ? h(
              'div',
              { class: 'usage-line' },
              h('span', { class: 'chips-label', text: 'info' }),
              h('code', { class: 'inline-code', text: compact }),
            )
          : jsonDetails('info', info, false),
      );
    }
    if (trace.tools?.length)
      card.append(
        jsonDetails(`tools offered (${trace.tools.length}): ${trace.tools.map((t) => t.name).join(', ')}`, trace.tools, false),
      );
    return card;
  }

  function renderEpisode(row, episode) {
    for (const list of currentLists) list.destroy();
    currentLists = [];
    const position = visibleRows.indexOf(row);
    const prev = position > 0 ? visibleRows[position - 1] : null;
    const next = position >= 0 && position < visibleRows.length - 1 ? visibleRows[position + 1] : null;
    const navLink = (target, text, key) =>
      target
        ? h('a', { class: 'btn', href: `#episode=${encodeURIComponent(target.id)}`, text, title: `${target.task} (${key})` })
        : h('span', { class: 'btn disabled', text });
    const head = h(
      'div',
      { class: 'episode-head' },
      h(
        'div',
        { class: 'episode-title' },
        h('a', { class: 'btn', href: '#', text: '← Episodes', title: 'back to the table (Esc)' }),
        navLink(prev, '‹ prev', '['),
        navLink(next, 'next ›', ']'),
        h('h2', { text: episode.task.key }),
        episode.ok ? badge('ok', 'ok') : badge('failed', 'err'),
        h('span', {
          class: 'muted small',
          text: `${episode.env.id} · rollout ${episode.group.index} of group ${episode.group.id}${episode.attempt ? ` · attempt ${episode.attempt}` : ''}`,
        }),
        h('span', { class: 'spacer' }),
        h('span', { class: 'muted small mono', text: episode.id, title: 'episode id (the URL fragment links here)' }),
        h('span', {
          class: 'muted small',
          text: `${fmt.ms(episode.endedAt === null ? null : episode.endedAt - episode.startedAt)} · ${fmt.tokens(row.tokens)} tokens`,
        }),
      ),
      h(
        'div',
        { class: 'episode-meta' },
        jsonDetails('task data', episode.task.data, false),
        episode.errors.length
          ? h(
              'div',
              { class: 'episode-errors' },
              episode.errors.map((e) =>
                h(
                  'div',
                  { class: 'trace-error' },
                  h('b', { text: e.type }),
                  e.stage ? h('span', { class: 'muted', text: ` [${e.stage}]` }) : null,
                  `: ${e.message}`,
                ),
              ),
            )
          : null,
      ),
    );
    const columnsEl = h('div', { class: `trace-columns ${episode.traces.length > 3 ? 'many' : ''}` });
    if (episode.traces.length === 0) columnsEl.append(h('p', { class: 'muted pad', text: 'This episode has no traces.' }));
    for (const trace of episode.traces) {
      const items = traceItems(trace);
      const scroller = h('div', { class: 'trace-scroll' });
      const column = h(
        'section',
        {
          class: 'trace-column',
          'data-agent': trace.agent.name,
          'data-trace': trace.id,
          style: `--role:${roleColor(trace.agent.name)}`,
        },
        scroller,
      );
      columnsEl.append(column);
      currentLists.push({ scroller, items, trace });
    }
    episodeView.replaceChildren(head, columnsEl);
    // Lists are created once the columns are in the document (they need the viewport height).
    currentLists = currentLists.map(({ scroller, items, trace }) => {
      const list = new VirtualList({
        scroller,
        count: items.length + 1,
        estimate: (i) => (i === 0 ? 320 : estimateItem(items[i - 1])),
        render: (i) => (i === 0 ? traceHeader(trace, episode) : renderItem(items[i - 1])),
      });
      scroller.dataset.items = String(items.length);
      return list;
    });
    document.title = `${episode.task.key} · ${index.run.name} · troupe`;
  }

  let episodeToken = 0;
  async function showEpisode(id) {
    const started = performance.now();
    const token = ++episodeToken;
    runView.hidden = true;
    episodeView.hidden = false;
    const row = rowsById.get(id);
    crumbs.replaceChildren(h('span', { class: 'crumb-sep', text: '/' }), h('span', { text: row ? row.task : id }));
    if (!row) {
      episodeView.replaceChildren(
        h(
          'div',
          { class: 'card pad' },
          h('h2', { text: 'Episode not found' }),
          h('p', { text: `No episode with id ${id} in this run.` }),
          h('a', { class: 'btn', href: '#', text: '← Episodes' }),
        ),
      );
      return;
    }
    episodeView.replaceChildren(h('p', { class: 'muted pad', text: 'Loading episode…' }));
    let episode;
    try {
      episode = await loadEpisode(row);
    } catch (error) {
      if (token !== episodeToken) return;
      episodeView.replaceChildren(
        h(
          'div',
          { class: 'card pad' },
          h('h2', { text: 'Could not load the episode' }),
          h('p', { class: 'err-text', text: String(error?.message ? error.message : error) }),
        ),
      );
      return;
    }
    if (token !== episodeToken) return;
    renderEpisode(row, episode);
    timings.episodeMs = performance.now() - started;
    document.body.dataset.episode = id;
  }

  function showRun() {
    for (const list of currentLists) list.destroy();
    currentLists = [];
    episodeView.hidden = true;
    episodeView.replaceChildren();
    runView.hidden = false;
    crumbs.replaceChildren();
    delete document.body.dataset.episode;
    document.title = `${index.run.name} · troupe`;
    renderRows(true);
  }

  function route() {
    const match = /^#episode=(.+)$/.exec(location.hash);
    if (match) {
      let id = match[1];
      try {
        id = decodeURIComponent(id);
      } catch {}
      showEpisode(id);
    } else showRun();
  }

  window.addEventListener('hashchange', route);
  document.addEventListener('keydown', (event) => {
    if (episodeView.hidden || event.target instanceof HTMLInputElement || event.metaKey || event.ctrlKey || event.altKey) return;
    const id = document.body.dataset.episode;
    const row = id ? rowsById.get(id) : null;
    const position = row ? visibleRows.indexOf(row) : -1;
    if (event.key === 'Escape') location.hash = '';
    else if (event.key === '[' && position > 0) location.hash = `episode=${encodeURIComponent(visibleRows[position - 1].id)}`;
    else if (event.key === ']' && position >= 0 && position < visibleRows.length - 1)
      location.hash = `episode=${encodeURIComponent(visibleRows[position + 1].id)}`;
  });

  refreshTable();
  route();
  timings.firstRenderMs = performance.now() - t0;
  performance.mark('troupe:ready');
  document.body.dataset.ready = '1';
})();
