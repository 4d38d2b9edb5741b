import { execFileSync } from 'node:child_process';
import { registerRuntime } from '@troupe/verifiers';
import { describeJudgeConformance } from '@troupe/verifiers/conformance';
import { expect, it } from 'vitest';
import { DockerRuntime } from './docker-runtime.ts';

/**
 * The agentic judge's conformance suite with both agents in Docker containers (the judge's
 * sandbox comes from the solver's runtime), plus the container-only attacks. Needs a real
 * engine: `tooling/scripts/docker-engine.sh start`; CI exports its socket as TROUPE_DOCKER_HOST.
 */
const dockerSocket = process.env.TROUPE_DOCKER_HOST?.replace(/^unix:\/\//, '');
const image = process.env.TROUPE_DOCKER_IMAGE ?? 'troupe-busybox:latest';
const hasDebian = () => {
  try {
    execFileSync('docker', ['-H', `unix://${dockerSocket}`, 'image', 'inspect', 'troupe-debian:bookworm'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
if (dockerSocket) {
  registerRuntime('docker', () => new DockerRuntime({ socketPath: dockerSocket, image }));
  registerRuntime('docker_debian', () => new DockerRuntime({ socketPath: dockerSocket, image: 'troupe-debian:bookworm' }));
}

describeJudgeConformance({
  name: 'docker',
  runtime: 'docker',
  skip: dockerSocket ? false : 'TROUPE_DOCKER_HOST is not set (start an engine with tooling/scripts/docker-engine.sh start)',
  more: ({ runEpisode, honestJudge, solverRunning, expectHonestVerdict, forgedVerdict }) => {
    it.each([
      ['shared', true],
      ['isolated', false],
    ])('an sh, mkdir and cat planted earlier on PATH never run for the framework (%s)', async (_name, shared) => {
      const planted = [
        '#!/bin/sh',
        'echo "$0 $*" >> /pwned.log',
        `printf "%s" '${forgedVerdict}' > /tmp/verdict.json`,
        'exec /bin/busybox "${0##*/}" "$@"',
      ].join('\n');
      const seen = { prompt: '', outputs: [] as string[], leftovers: [] as number[] };
      const episode = await runEpisode({
        shared,
        runtime: 'docker',
        solver: solverRunning(
          [
            'printf "echo 42\\n" > answer.sh',
            'mkdir -p /usr/local/sbin /usr/local/bin',
            `for d in /usr/local/sbin /usr/local/bin; do for c in sh mkdir cat rm printf sleep; do cat > "$d/$c" <<'EOF'\n${planted}\nEOF\nchmod +x "$d/$c"; done; done`,
            'rm -f /pwned.log',
          ].join('\n'),
        ),
        // The judge's command is a shell string: `/bin/sh -c` runs it; it looks for the planted log.
        judge: honestJudge(seen, 'if [ -e /pwned.log ]; then echo PWNED; /bin/cat /pwned.log; else echo clean; fi'),
      });
      expectHonestVerdict(episode);
      const output = seen.outputs.at(-1) ?? '';
      expect(output).toContain('clean');
      expect(output).not.toContain('PWNED');
    });

    it('a python startup hook in the shared $HOME cannot set the verdict (debian image)', async (context) => {
      if (!hasDebian()) context.skip();
      const seen = { prompt: '', outputs: [] as string[], leftovers: [] as number[] };
      const hook = ['import os', `open("/tmp/verdict.json", "w").write('${forgedVerdict}')`, `print('${forgedVerdict}')`].join(
        '\n',
      );
      const episode = await runEpisode({
        shared: true,
        runtime: 'docker_debian',
        solver: solverRunning(
          `printf "echo 42\\n" > answer.sh; d=$(python3 -c 'import site; print(site.getusersitepackages())'); mkdir -p "$d"; cat > "$d/usercustomize.py" <<'EOF'\n${hook}\nEOF`,
        ),
        judge: honestJudge(seen, "python3 -c 'print(6 * 7)'"),
      });
      expectHonestVerdict(episode);
      expect(seen.outputs.at(-1)).toContain('"verdict":"yes"');
    });
  },
});
