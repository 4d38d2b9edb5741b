#!/usr/bin/python3
"""Checks a run's rollout files against prime-rl's MicroBatch wire and the trainer's invariants.

Usage: check_rollouts.py <output_dir> [--seq-len N] [--pad-to-multiple-of M] [--world-size W]
                         [--samples STEP=step_N.jsonl ...]

Decodes every <output_dir>/rollouts/step_<N>/rank_<r>.bin with plain msgpack (as msgspec's
array_like MicroBatch: a list of arrays, fields in declaration order; msgspec writes all 16, troupe
leaves trailing absent ones off, and both are read)
and checks, per step:
  - every rank holds the same number of micro batches, ranks are 0..W-1;
  - every per-token list is as long as input_ids;
  - sequence_lengths and seq_lens each sum to len(input_ids);
  - position_ids restart at 0 at every sample boundary and count up inside a sample (the
    padding appended to the last sample restarts once more at 0);
  - loss_mask is true only where a sampled token can be: never on padding; a mask-true token has
    a finite advantage and a logprob <= 0, a mask-false token advantage 0 (which tokens were
    sampled, and of which traces, is checked against the sample export below);
  - env_names are strings per token, "all" never appears, padding has "";
  - no sample (sequence length minus padding) is longer than --seq-len;
  - temperatures are positive;
  - the token count of every micro batch is a multiple of --pad-to-multiple-of.
When a step has a sample export (troupe.batch v2 JSONL: a header line, then one prime-rl
TrainingSample per line, as troupe packed them), the export must be exactly the samples in the
rank files: each exported sample (truncated to --seq-len) appears once with the same token ids,
mask, logprobs, advantages, temperatures and env name, and every other packed sample is a
zero-loss filler. This checks that the mask is on sampled tokens of trainable traces only, as
troupe decided them. Exports are found at <output_dir>/samples/step_<N>.jsonl (the
orchestrator's transport.exportSamples) or given with --samples STEP=PATH.
Prints one line per step and "ok: ..." at the end; exits 1 with every violation listed.
Only the Python standard library and python3-msgpack are needed (Debian packages it).
"""

import argparse
import math
import os
import re
import sys

import msgpack

FIELDS = [
    "input_ids",
    "loss_mask",
    "advantages",
    "inference_logprobs",
    "position_ids",
    "sequence_lengths",
    "temperatures",
    "env_names",
    "seq_lens",
    "ref_logprobs",
    "routed_experts",
    "mm_kwargs",
    "mm_token_type_ids",
    "rl_weights",
    "ce_weights",
    "ref_kl_weights",
]
REQUIRED = 9
PER_TOKEN = [
    "loss_mask",
    "advantages",
    "inference_logprobs",
    "position_ids",
    "temperatures",
    "env_names",
    "ref_logprobs",
    "mm_token_type_ids",
    "rl_weights",
    "ce_weights",
    "ref_kl_weights",
]


def as_struct(raw, where, errors):
    if not isinstance(raw, (list, tuple)):
        errors.append(f"{where}: a MicroBatch must be a msgpack array (array_like), got {type(raw).__name__}")
        return None
    if not REQUIRED <= len(raw) <= len(FIELDS):
        errors.append(f"{where}: {len(raw)} fields, expected {REQUIRED}..{len(FIELDS)}")
        return None
    batch = {name: None for name in FIELDS}
    for name, value in zip(FIELDS, raw):
        batch[name] = value
    for name in FIELDS[:REQUIRED]:
        if not isinstance(batch[name], list):
            errors.append(f"{where}.{name}: required list, got {type(batch[name]).__name__}")
            return None
    return batch


def packed_samples(batch):
    """(tokens, mask, logprobs, advantages, temperatures, env name) of each packed sample, padding cut off."""
    out = []
    start = 0
    lengths = batch["sequence_lengths"]
    for index, length in enumerate(lengths):
        end = start + length
        if index == len(lengths) - 1:
            positions = batch["position_ids"]
            for t in range(start + 1, end):
                if positions[t] == 0:
                    end = t
                    break
        out.append(
            (
                tuple(batch["input_ids"][start:end]),
                tuple(batch["loss_mask"][start:end]),
                tuple(batch["inference_logprobs"][start:end]),
                tuple(batch["advantages"][start:end]),
                tuple(batch["temperatures"][start:end]),
                batch["env_names"][start] if end > start else "",
            )
        )
        start += length
    return out


def check_against_export(step, packed, path, seq_len, errors):
    import json

    with open(path, encoding="utf-8") as f:
        lines = [line for line in f.read().split("\n") if line]
    header = json.loads(lines[0]) if lines else {}
    if header.get("format") != "troupe.batch" or header.get("version") != 2:
        version = header.get("version")
        errors.append(f"{path}: not a troupe.batch v2 sample export (header version {version})")
        return
    if header.get("numSamples") != len(lines) - 1:
        errors.append(f"{path}: header numSamples {header.get('numSamples')} but {len(lines) - 1} sample lines")
    remaining = {}
    for key in packed:
        remaining[key] = remaining.get(key, 0) + 1
    for number, line in enumerate(lines[1:], start=2):
        sample = json.loads(line)
        n = len(sample["token_ids"])
        cut = n if seq_len is None else seq_len
        advantages = sample.get("advantages")
        if advantages is None:
            advantages = [0.0] * n
        key = (
            tuple(sample["token_ids"][:cut]),
            tuple(sample["mask"][:cut]),
            tuple(float(v) for v in sample["logprobs"][:cut]),
            tuple(float(v) for v in advantages[:cut]),
            tuple(float(v) for v in sample["temperatures"][:cut]),
            sample["env_name"],
        )
        if remaining.get(key, 0) == 0:
            origin = sample.get("troupe") or {}
            errors.append(
                f"step_{step}: {path} line {number} (role {origin.get('role')}, trace {origin.get('trace_id')}) "
                "is not in the rank files as exported"
            )
            continue
        remaining[key] -= 1
    for key, count in remaining.items():
        if count and any(key[1]):
            errors.append(f"step_{step}: a packed sample of {len(key[0])} tokens with trained tokens is not in {path}")


def check_micro_batch(batch, where, args, errors):
    n = len(batch["input_ids"])
    for name in PER_TOKEN:
        values = batch[name]
        if values is not None and len(values) != n:
            errors.append(f"{where}.{name}: {len(values)} entries, input_ids has {n}")
            return
    if not all(isinstance(t, int) and t >= 0 for t in batch["input_ids"]):
        errors.append(f"{where}.input_ids: not all non-negative integers")
    if not all(isinstance(b, bool) for b in batch["loss_mask"]):
        errors.append(f"{where}.loss_mask: not all booleans")
    for name in ("advantages", "inference_logprobs", "temperatures"):
        if not all(isinstance(v, float) for v in batch[name]):
            errors.append(f"{where}.{name}: not all msgpack floats (msgspec writes float64)")
    for name in ("sequence_lengths", "seq_lens"):
        total = sum(batch[name])
        if total != n:
            errors.append(f"{where}.{name}: sums to {total}, input_ids has {n}")
            return
    if args.pad_to_multiple_of > 1 and n % args.pad_to_multiple_of != 0:
        errors.append(f"{where}: {n} tokens is not a multiple of {args.pad_to_multiple_of}")

    positions = batch["position_ids"]
    mask = batch["loss_mask"]
    envs = batch["env_names"]
    logprobs = batch["inference_logprobs"]
    advantages = batch["advantages"]
    lengths = batch["sequence_lengths"]
    start = 0
    for index, length in enumerate(lengths):
        if length <= 0:
            errors.append(f"{where}.sequence_lengths[{index}]: {length} (must be positive)")
            return
        segment = positions[start : start + length]
        if segment[0] != 0:
            errors.append(f"{where}: sample {index} starts at position {segment[0]}, not 0")
        # Inside a sample positions count up; only the last sample may restart once (its padding).
        restarts = [t for t in range(1, length) if segment[t] != segment[t - 1] + 1]
        last = index == len(lengths) - 1
        padding = 0
        if restarts:
            if not last or len(restarts) > 1 or segment[restarts[0]] != 0:
                errors.append(f"{where}: positions of sample {index} do not count up from 0 (break at {restarts})")
            else:
                padding = length - restarts[0]
                pad = range(start + restarts[0], start + length)
                if any(mask[t] for t in pad):
                    errors.append(f"{where}: loss_mask true on padding of sample {index}")
                if any(envs[t] != "" for t in pad):
                    errors.append(f"{where}: padding of sample {index} has a non-empty env name")
                if any(advantages[t] != 0.0 for t in pad):
                    errors.append(f"{where}: padding of sample {index} has a non-zero advantage")
        real = length - padding
        if args.seq_len is not None and real > args.seq_len:
            errors.append(f"{where}: sample {index} has {real} tokens, more than seq_len {args.seq_len}")
        names = set(envs[start : start + real])
        if len(names) != 1 or "" in names:
            errors.append(f"{where}: sample {index} env names {sorted(names)} (one non-empty name per sample)")
        start += length

    for t in range(n):
        if not isinstance(envs[t], str):
            errors.append(f"{where}.env_names[{t}]: not a string")
            break
        if envs[t] == "all":
            errors.append(f"{where}.env_names[{t}]: 'all' is reserved")
            break
    for t in range(n):
        if mask[t] and (not math.isfinite(advantages[t]) or logprobs[t] > 0.0):
            errors.append(f"{where}: masked token {t} has advantage {advantages[t]} / logprob {logprobs[t]}")
            break
        if not mask[t] and advantages[t] != 0.0:
            errors.append(f"{where}: token {t} is off the loss mask but has advantage {advantages[t]}")
            break
    for t, temperature in enumerate(batch["temperatures"]):
        if not temperature > 0.0:
            errors.append(f"{where}.temperatures[{t}]: {temperature} (must be > 0)")
            break


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir")
    parser.add_argument("--seq-len", type=int, default=None)
    parser.add_argument("--pad-to-multiple-of", type=int, default=1)
    parser.add_argument("--world-size", type=int, default=None)
    parser.add_argument("--samples", action="append", default=[], metavar="STEP=PATH")
    args = parser.parse_args()
    exports = {}
    for item in args.samples:
        step_text, _, path = item.partition("=")
        exports[int(step_text)] = path

    export_dir = os.path.join(args.output_dir, "samples")
    if os.path.isdir(export_dir):
        for name in os.listdir(export_dir):
            found = re.fullmatch(r"step_(\d+)\.jsonl", name)
            if found:
                exports.setdefault(int(found.group(1)), os.path.join(export_dir, name))

    rollouts = os.path.join(args.output_dir, "rollouts")
    if not os.path.isdir(rollouts):
        print(f"error: {rollouts} does not exist", file=sys.stderr)
        return 1
    steps = sorted(int(m.group(1)) for m in (re.fullmatch(r"step_(\d+)", d) for d in os.listdir(rollouts)) if m)
    errors = []
    if not steps:
        errors.append(f"{rollouts}: no step_<N> directories")
    if steps and steps[0] < 1:
        errors.append(f"{rollouts}: step_{steps[0]} (steps are 1-indexed)")
    totals = {"steps": 0, "micro_batches": 0, "tokens": 0, "trained_tokens": 0, "samples": 0, "exports_checked": 0}
    for step in steps:
        step_dir = os.path.join(rollouts, f"step_{step}")
        names = os.listdir(step_dir)
        leftovers = [name for name in names if name.endswith(".tmp")]
        if leftovers:
            errors.append(f"step_{step}: temporary files left behind: {leftovers}")
        ranks = sorted(int(m.group(1)) for m in (re.fullmatch(r"rank_(\d+)\.bin", name) for name in names) if m)
        if ranks != list(range(len(ranks))) or not ranks:
            errors.append(f"step_{step}: rank files {ranks} are not rank_0..rank_{len(ranks) - 1}")
        if args.world_size is not None and len(ranks) != args.world_size:
            errors.append(f"step_{step}: {len(ranks)} rank files, expected {args.world_size}")
        counts = []
        packed = []
        for rank in ranks:
            path = os.path.join(step_dir, f"rank_{rank}.bin")
            with open(path, "rb") as f:
                try:
                    value = msgpack.unpackb(f.read(), raw=False, strict_map_key=False)
                except Exception as error:  # noqa: BLE001
                    errors.append(f"{path}: not msgpack ({error})")
                    continue
            if not isinstance(value, list):
                errors.append(f"{path}: expected list[MicroBatch], got {type(value).__name__}")
                continue
            counts.append(len(value))
            for index, raw in enumerate(value):
                where = f"step_{step}/rank_{rank}[{index}]"
                batch = as_struct(raw, where, errors)
                if batch is None:
                    continue
                check_micro_batch(batch, where, args, errors)
                packed.extend(packed_samples(batch))
                totals["micro_batches"] += 1
                totals["tokens"] += len(batch["input_ids"])
                totals["trained_tokens"] += sum(1 for b in batch["loss_mask"] if b)
                totals["samples"] += len(batch["sequence_lengths"])
        if step in exports:
            check_against_export(step, packed, exports[step], args.seq_len, errors)
            totals["exports_checked"] += 1
        if len(set(counts)) > 1:
            errors.append(f"step_{step}: ranks hold different numbers of micro batches {counts}")
        totals["steps"] += 1
        print(f"step_{step}: {len(ranks)} ranks x {counts[0] if counts else 0} micro batches")
    for step in exports:
        if step not in steps:
            errors.append(f"sample export of step {step} ({exports[step]}): no rollouts/step_{step}")
    if errors:
        for error in errors[:200]:
            print(f"FAIL {error}", file=sys.stderr)
        print(f"{len(errors)} violation(s)", file=sys.stderr)
        return 1
    print("ok: " + " ".join(f"{key}={value}" for key, value in totals.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
