#!/usr/bin/env python3
"""A stand-in for `torchrun --nproc-per-node N script.py args...` (no GPU, no torch here).

It starts N copies of the script, one process per rank, with the environment torchrun gives each
worker (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, GROUP_RANK), and,
as torchrun's elastic agent does, when one worker fails it stops the others and exits non-zero.
prime-rl launches its trainer this way: `src/prime_rl/entrypoints/rl.py:320-335` at 559b447
(`torchrun --nproc-per-node=<trainer GPUs> -m prime_rl.trainer.rl.train @ trainer.toml`).
Only `--nproc-per-node` (or `--nproc_per_node`) and the rendezvous/log options prime-rl passes
are understood; `-m module` is not (give the script path).
"""

import os
import signal
import subprocess
import sys
import time


def parse(argv):
    nproc = 1
    rest = list(argv)
    while rest and rest[0].startswith("--"):
        arg = rest.pop(0)
        if arg.startswith("--nproc-per-node") or arg.startswith("--nproc_per_node"):
            value = arg.split("=", 1)[1] if "=" in arg else rest.pop(0)
            nproc = int(value)
        elif "=" not in arg and arg in ("--role", "--rdzv-endpoint", "--rdzv-id", "--log-dir", "--redirect", "--tee"):
            rest.pop(0)
        # other --key=value options torchrun takes (rdzv, logs) change nothing here
    if not rest:
        sys.exit("torchrun (double): usage: torchrun.py --nproc-per-node N script.py [args...]")
    return nproc, rest


def main():
    nproc, command = parse(sys.argv[1:])
    procs = []
    for rank in range(nproc):
        env = dict(os.environ)
        env.update(
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            GROUP_RANK="0",
            WORLD_SIZE=str(nproc),
            LOCAL_WORLD_SIZE=str(nproc),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=env.get("MASTER_PORT", "29500"),
        )
        procs.append(subprocess.Popen([sys.executable, *command], env=env))

    def stop(*_):
        for p in procs:
            if p.poll() is None:
                p.terminate()

    signal.signal(signal.SIGTERM, lambda *a: (stop(), sys.exit(143)))
    signal.signal(signal.SIGINT, lambda *a: (stop(), sys.exit(130)))
    failed = 0
    while any(p.poll() is None for p in procs):
        for rank, p in enumerate(procs):
            code = p.poll()
            if code not in (None, 0) and not failed:
                failed = code
                print(f"torchrun (double): rank {rank} exited with {code}; stopping the other ranks", file=sys.stderr)
                stop()
        time.sleep(0.05)
    codes = [p.returncode for p in procs]
    bad = next((c for c in codes if c != 0), 0)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
