/**
 * A stall tracer for benches: a 1 ms interval notes every event-loop turn that kept it waiting
 * ≥ `minMs` (when it started, its wall time, and the process CPU time spent in it — the figure the
 * machine's load changes least: at load 15 a turn of 40 ms CPU can take 300 ms of wall time).
 * With a V8 CPU profile of the same window, `attribute` names the functions sampled in the worst
 * turns, so a stall is traced to the code that made it.
 */
export interface Stall {
  /** Start of the turn, ms after the tracer started. */
  atMs: number;
  wallMs: number;
  /** Process CPU (user + system, all threads: GC helpers included) during the turn. */
  cpuMs: number;
  /** Start and end on the monotonic clock of V8 CPU profiles (µs). */
  startUs: number;
  endUs: number;
}

export function traceStalls(minMs = 20): { stop: () => Stall[] } {
  const stalls: Stall[] = [];
  const origin = process.hrtime.bigint();
  let last = origin;
  let lastCpu = process.cpuUsage();
  const timer = setInterval(() => {
    const now = process.hrtime.bigint();
    const cpu = process.cpuUsage();
    const wallMs = Number(now - last) / 1e6;
    if (wallMs >= minMs) {
      stalls.push({
        atMs: Number(last - origin) / 1e6,
        wallMs,
        cpuMs: (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000,
        startUs: Number(last / 1000n),
        endUs: Number(now / 1000n),
      });
    }
    last = now;
    lastCpu = cpu;
  }, 1);
  return {
    stop: () => {
      clearInterval(timer);
      return stalls;
    },
  };
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** A V8 CPU profile (`Profiler.stop`), the parts read here. */
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * For each stall, the functions on the stack most often in the samples taken during it (inclusive,
 * share of the stall's samples), skipping the event loop's own frames.
 */
export function attribute(stalls: Stall[], profile: CpuProfile, top = 8): { stall: Stall; samples: number; frames: string[] }[] {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (n: ProfileNode) =>
    `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`;
  const skip =
    /^\((root|program|idle)\)|^(processTicksAndRejections|runMicrotasks|runNextTicks|processTimers|listOnTimeout|processImmediate|emit) /;
  let t = profile.startTime;
  const times = profile.timeDeltas.map((d) => {
    t += d;
    return t;
  });
  return stalls.map((stall) => {
    const counts = new Map<string, number>();
    let samples = 0;
    profile.samples.forEach((id, i) => {
      const at = times[i] as number;
      if (at < stall.startUs || at > stall.endUs) return;
      samples++;
      const seen = new Set<string>();
      for (let node: number | undefined = id; node !== undefined; node = parent.get(node)) {
        const frame = name(nodes.get(node) as ProfileNode);
        if (skip.test(frame) || seen.has(frame)) continue;
        seen.add(frame);
        counts.set(frame, (counts.get(frame) ?? 0) + 1);
      }
    });
    const frames = [...counts]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([frame, n]) => `${Math.round((100 * n) / Math.max(samples, 1))}% ${frame}`);
    return { stall, samples, frames };
  });
}
