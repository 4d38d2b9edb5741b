import { gunzipSync } from 'node:zlib';
import { Episode, Trace } from '@troupe/verifiers';
import { describe, expect, it } from 'vitest';
import { fixtureEpisodes, toJsonl } from './__fixtures__/fixture-run.ts';
import { packEpisodes, renderRunHtml, scriptJson } from './render-run-html.ts';
import { parseTracesJsonl, type ViewerRun } from './run-directory.ts';
import { ViewerIndexSchema } from './run-index.ts';

function runOf(episodes: Episode[]): ViewerRun {
  const { episodes: parsed } = parseTracesJsonl({ text: toJsonl(episodes) });
  return {
    runDir: '/runs/r',
    name: 'my-run',
    config: { model: 'm' },
    summary: { passAtK: 0.5 },
    episodes: parsed,
    warnings: ['a warning'],
  };
}

/** The embedded episodes, inflated from their gzip + base64 chunks. */
function embeddedEpisodes(html: string): unknown[] {
  const out: unknown[] = [];
  for (const match of html.matchAll(/<script type="text\/plain" id="chunk-\d+">(.*?)<\/script>/gs)) {
    for (const line of gunzipSync(Buffer.from(match[1]!, 'base64')).toString('utf8').split('\n')) out.push(JSON.parse(line));
  }
  return out;
}

function jsonScript(html: string, id: string): unknown {
  const match = new RegExp(`<script type="application/json" id="${id}">(.*?)</script>`, 's').exec(html);
  if (!match) throw new Error(`no script ${id}`);
  return JSON.parse(match[1]!);
}

describe('renderRunHtml', () => {
  it('is one self-contained page: no external script, style, image or link, and a CSP that forbids the network', () => {
    const html = renderRunHtml(runOf(fixtureEpisodes()));
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script[^>]+src=/i);
    expect(html).not.toMatch(/<link[^>]+href=/i);
    expect(html).not.toMatch(/<img[^>]+src=/i);
    expect(html).not.toMatch(/@import|url\(\s*['"]?https?:/i);
    expect(html).toContain("default-src 'none'");
    expect(html).toContain("connect-src 'none'");
  });

  it('embeds the run index and every episode record as JSON', () => {
    const run = runOf(fixtureEpisodes());
    const html = renderRunHtml(run);
    const index = ViewerIndexSchema.parse(jsonScript(html, 'troupe-index'));
    expect(index.run.name).toBe('my-run');
    expect(index.run.warnings).toEqual(['a warning']);
    expect(index.episodes).toHaveLength(run.episodes.length);
    expect(embeddedEpisodes(html)).toEqual(run.episodes.map((e) => JSON.parse(e.json)));
    expect(jsonScript(html, 'troupe-mode')).toEqual({
      episodes: 'embedded',
      encoding: 'gzip-base64-jsonl',
      chunks: [run.episodes.length],
    });
  });

  it('leaves episodes out when they are fetched from the server', () => {
    const html = renderRunHtml(runOf(fixtureEpisodes()), { embedEpisodes: false });
    expect(html).not.toContain('id="chunk-0"');
    expect(jsonScript(html, 'troupe-mode')).toEqual({ episodes: 'fetch' });
    expect(html).toContain("connect-src 'self'");
  });

  it('cannot be broken out of by message content: </script> and <!-- stay inside the JSON', () => {
    const task = { key: '</script><script>alert(1)</script>', hash: 'h', data: { note: '<!-- x -->' } };
    const episode = new Episode({ id: 'evil', env: { id: 'e' }, task, group: { id: 'g', index: 0 } });
    const trace = new Trace({ task, agent: { name: '<b>solver</b>', trainable: true } });
    trace.addPrompt([{ role: 'user', content: '</script><img src=x onerror=alert(1)>' }]);
    episode.traces.push(trace);
    const html = renderRunHtml({ ...runOf([episode]), name: '</title><script>x</script>' });
    expect(html.match(/<\/script>/g)).toHaveLength(4); // mode, index, app, one episode
    expect(html).toContain('<title>&#60;/title&#62;&#60;script&#62;x&#60;/script&#62; · troupe</title>');
    expect((embeddedEpisodes(html)[0] as { task: { key: string } }).task.key).toBe(task.key);
  });
});

describe('packEpisodes', () => {
  it('packs consecutive episodes into chunks of at most 64, keeping their order', () => {
    const jsons = Array.from({ length: 150 }, (_, i) => JSON.stringify({ i }));
    const { chunks, counts } = packEpisodes(jsons);
    expect(counts).toEqual([64, 64, 22]);
    const lines = chunks.flatMap((c) => gunzipSync(Buffer.from(c, 'base64')).toString('utf8').split('\n'));
    expect(lines).toEqual(jsons);
  });

  it('starts a new chunk before one grows past 512 KiB of JSON', () => {
    const big = JSON.stringify({ text: 'x'.repeat(300 * 1024) });
    expect(packEpisodes([big, big, '{}']).counts).toEqual([1, 2]);
  });
});

describe('scriptJson', () => {
  it('escapes < and keeps the same JSON value', () => {
    const text = JSON.stringify({ a: '</script><!--' });
    expect(scriptJson(text)).not.toContain('<');
    expect(JSON.parse(scriptJson(text))).toEqual({ a: '</script><!--' });
  });
});
