#!/usr/bin/env python3
"""A stand-in for prime-rl's RL trainer, rank by rank, for tests on a machine with no GPU.

    python3 torchrun.py --nproc-per-node 2 trainer.py @ trainer.toml [--resume | --resume.step N]

One process per rank (started by torchrun or `torchrun.py`, which set RANK and WORLD_SIZE). Each
rank does what `src/prime_rl/trainer/rl/train.py` at 559b447 does with a step, less the model: it
reads only its own data rank's micro batches (file or ZMQ), decodes them with the checks msgspec's
`Decoder(type=list[MicroBatch])` makes, fails on an empty list where train.py does, and rank 0
broadcasts `broadcasts/step_N/` + `STABLE` after every rank is done with step N. No tensors: each
rank appends what it read to `<output_dir>/trainer-double/rank_<r>.jsonl`, so a test can see that
every rank file of every step was read, by the rank that owns it.

With `[ckpt]` it checkpoints as `train.py` does (`checkpoints/step_N/trainer/`, one file per rank,
at `ckpt.interval` and after the last step) and `--resume` / `[resume]` continues from one: the
rank state is read back, the startup broadcast is `v{checkpoint step}` and the first rank file read
is that of the next step.

Every rule below names the upstream line it follows. The weights it broadcasts are a
`config.json` and a `model.safetensors` that is a named pipe nobody writes: whoever opens it for
reading blocks for ever (the orchestrator must never read the weights; vLLM's double does not).
"""

import json
import os
import shutil
import sys
import time
import tomllib
from pathlib import Path

import msgpack

HERE = Path(__file__).resolve().parent


class ValidationError(Exception):
    """What msgspec raises on a payload that does not match `list[MicroBatch]`."""


# MicroBatch at `src/prime_rl/transports/rollouts/types.py:74-99` (559b447): an array_like struct,
# 9 required fields then 7 optional ones (None or the type).
FIELDS = [
    ("input_ids", "list[int]", True),
    ("loss_mask", "list[bool]", True),
    ("advantages", "list[float]", True),
    ("inference_logprobs", "list[float]", True),
    ("position_ids", "list[int]", True),
    ("sequence_lengths", "list[int]", True),
    ("temperatures", "list[float]", True),
    ("env_names", "list[str]", True),
    ("seq_lens", "list[int]", True),
    ("ref_logprobs", "list[float]", False),
    ("routed_experts", "RoutedExperts", False),
    ("mm_kwargs", "dict[str, EncodedTensor]", False),
    ("mm_token_type_ids", "list[int]", False),
    ("rl_weights", "list[float]", False),
    ("ce_weights", "list[float]", False),
    ("ref_kl_weights", "list[float]", False),
]
REQUIRED = sum(1 for _, _, required in FIELDS if required)


def kind(value):
    return {bool: "bool", int: "int", float: "float", str: "str", bytes: "bytes", list: "array", dict: "object"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def check_scalar(value, expected, path):
    # msgspec is strict: an int is never a bool, a bool is never an int or float, a float is never an int.
    ok = {
        "int": type(value) is int,
        "bool": type(value) is bool,
        "float": type(value) in (int, float),
        "str": type(value) is str,
        "bytes": type(value) is bytes,
    }[expected]
    if not ok:
        raise ValidationError(f"Expected `{expected}`, got `{kind(value)}` - at `{path}`")


def check_list(value, item, path):
    if type(value) is not list:
        raise ValidationError(f"Expected `array`, got `{kind(value)}` - at `{path}`")
    for i, element in enumerate(value):
        check_scalar(element, item, f"{path}[{i}]")


def check_field(value, typ, path):
    if typ.startswith("list["):
        check_list(value, typ[5:-1], path)
    elif typ == "RoutedExperts":  # types.py:15-18: array_like [data: bytes, shape: list[int], dtype: str]
        if type(value) is not list or len(value) != 3:
            raise ValidationError(f"Expected `array` of length 3, got `{kind(value)}` - at `{path}`")
        check_scalar(value[0], "bytes", f"{path}[0]")
        check_list(value[1], "int", f"{path}[1]")
        check_scalar(value[2], "str", f"{path}[2]")
    else:  # dict[str, EncodedTensor], types.py:7-10: array_like [dtype: str, shape: list[int], data: bytes]
        if type(value) is not dict:
            raise ValidationError(f"Expected `object`, got `{kind(value)}` - at `{path}`")
        for key, tensor in value.items():
            check_scalar(key, "str", f"{path}.key")
            if type(tensor) is not list or len(tensor) != 3:
                raise ValidationError(f"Expected `array` of length 3 - at `{path}[...]`")


def decode_micro_batches(payload):
    """`msgspec.msgpack.Decoder(type=list[MicroBatch]).decode` (rollouts/base.py:34) as far as types go."""
    value = msgpack.unpackb(payload, raw=False, strict_map_key=True)
    if type(value) is not list:
        raise ValidationError(f"Expected `array`, got `{kind(value)}`")
    for b, batch in enumerate(value):
        path = f"$[{b}]"
        if type(batch) is not list:
            raise ValidationError(f"Expected `array`, got `{kind(batch)}` - at `{path}`")
        if len(batch) < REQUIRED:
            raise ValidationError(f"Expected `array` of at least length {REQUIRED}, got {len(batch)} - at `{path}`")
        if len(batch) > len(FIELDS):
            raise ValidationError(f"Expected `array` of at most length {len(FIELDS)}, got {len(batch)} - at `{path}`")
        for f, (name, typ, required) in enumerate(FIELDS[: len(batch)]):
            if batch[f] is None and not required:
                continue
            check_field(batch[f], typ, f"{path}[{f}]")
    return value


def check_shapes(batches, where):
    """Per-token streams become `[1, len]` tensors side by side (`trainer/rl/data.py:211-235`) and
    the loss combines them token by token: a stream of another length fails there."""
    for b, batch in enumerate(batches):
        n = len(batch[0])
        for f, (name, typ, _) in enumerate(FIELDS[: len(batch)]):
            per_token = typ.startswith("list[") and name not in ("sequence_lengths", "seq_lens")
            if per_token and batch[f] is not None and len(batch[f]) != n:
                raise RuntimeError(f"{where}: micro batch {b}: {name} has {len(batch[f])} entries, input_ids {n}")


def load_config(path):
    """`@ trainer.toml`, checked against the TrainerConfig keys of the fixture (pydantic forbids extra keys)."""
    with open(path, "rb") as file:
        config = tomllib.load(file)
    schema = json.loads((HERE / "upstream-config.json").read_text())
    check_keys(config, schema["classes"], schema["roots"]["trainer"], "")
    return config


def check_keys(table, classes, cls, prefix):
    fields = classes[cls]["fields"]
    for key, value in table.items():
        if key not in fields:
            raise SystemExit(f"trainer config: {prefix}{key}: Extra inputs are not permitted ({cls})")
        nested = [t for t in fields[key]["classes"] if t in classes]
        if isinstance(value, dict) and nested:
            # A discriminated union picks the class by `type`; otherwise the one class.
            chosen = nested[0]
            if len(nested) > 1:
                chosen = next((c for c in nested if classes[c]["fields"].get("type", {}).get("default") == value.get("type")), None)
                if chosen is None:
                    raise SystemExit(f"trainer config: {prefix}{key}.type: no {'/'.join(nested)} has type {value.get('type')!r}")
            check_keys(value, classes, chosen, f"{prefix}{key}.")


def barrier(root, name, rank, world):
    """Every rank reaches `name` before any goes on (the collectives of a step: `dist.barrier()` in
    `transports/weights/filesystem.py:66`, the gradient all-reduce)."""
    (root / f"{name}.rank_{rank}").touch()
    while not all((root / f"{name}.rank_{r}").exists() for r in range(world)):
        time.sleep(0.01)


def broadcast(output_dir, step, interval_to_keep, lora=None):
    """`FileSystemWeightBroadcast.broadcast_weights` (`transports/weights/filesystem.py:33-75`): the
    master makes `broadcasts/step_N/`, saves, touches STABLE; then `maybe_clean` (`trainer/utils.py:349-363`,
    called at `train.py:596-597`) removes `step_{N-2}` unless it is on the checkpoint interval.
    With `[model.lora]` only the adapter is saved (`filesystem.py:43-60`): `adapter_model.safetensors`
    and the PEFT `adapter_config.json` of `trainer/lora.py:331-379` (r, lora_alpha, lora_dropout)."""
    save_dir = output_dir / "broadcasts" / f"step_{step}"
    save_dir.mkdir(parents=True, exist_ok=True)
    if lora is not None:
        adapter = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": lora.get("rank", 16),
                   "lora_alpha": lora.get("alpha", 32.0), "lora_dropout": lora.get("dropout", 0.0), "bias": "none"}
        (save_dir / "adapter_config.json").write_text(json.dumps(adapter) + "\n")
        weights = save_dir / "adapter_model.safetensors"
    else:
        (save_dir / "config.json").write_text('{"architectures": ["Qwen3ForCausalLM"]}\n')
        weights = save_dir / "model.safetensors"
    if not weights.exists():
        os.mkfifo(weights)
    (save_dir / "STABLE").touch()
    candidate = max(step - 2, 0)
    if step > 0 and not (interval_to_keep and candidate % interval_to_keep == 0):
        shutil.rmtree(output_dir / "broadcasts" / f"step_{candidate}", ignore_errors=True)


def parse_overrides(args, config):
    """The CLI after `@ trainer.toml` (pydantic-settings: a nested key as `--a.b value`). Only the
    resume keys are understood; a bare `--resume` resumes from the latest checkpoint
    (`configs/shared.py:48-56`: `ResumeConfig`, `step` >= 1, exclusive with `dir`)."""
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--resume":
            config.setdefault("resume", {})
        elif arg.startswith("--resume.step"):
            value = arg.split("=", 1)[1] if "=" in arg else (rest.pop(0) if rest else "")
            if not value.isdigit() or int(value) < 1:
                raise SystemExit(f"trainer config: resume.step: Input should be greater than or equal to 1 (got {value!r})")
            config.setdefault("resume", {})["step"] = int(value)
        else:
            raise SystemExit(f"trainer (double): {arg}: only --resume and --resume.step N are understood here")
    resume = config.get("resume")
    if resume is not None and resume.get("step") is not None and resume.get("dir") is not None:
        raise SystemExit("trainer config: resume.step and resume.dir are mutually exclusive")  # shared.py:58-62
    return config


def ckpt_dir(output_dir, config):
    """`setup_ckpt_manager` (`trainer/ckpt.py:309-318`): `ckpt.output_dir` or the trainer's
    `output_dir`, then `checkpoints/` (`utils/pathing.py:97-98`)."""
    base = (config.get("ckpt") or {}).get("output_dir") or output_dir
    return Path(base) / "checkpoints"


def all_ckpt_steps(directory):
    """`get_all_ckpt_steps` (`utils/pathing.py:117-120`): every `step_*` name, ascending."""
    if not directory.exists():
        return []
    return sorted(int(p.name.split("_")[-1]) for p in directory.glob("step_*"))


def resume_step(config, directory, rank):
    """`train.py:133-139`: `resume.dir`'s step, else `resume.step`, else the latest checkpoint
    (`resolve_latest_ckpt_step`, `utils/pathing.py:123-133`: None, a fresh start, when there is none)."""
    resume = config.get("resume")
    if resume is None:
        return None
    if resume.get("dir") is not None:
        return int(Path(resume["dir"]).name.removeprefix("step_"))
    if resume.get("step") is not None:
        return resume["step"]
    steps = all_ckpt_steps(directory)
    if not steps:
        if rank == 0:
            print(f"trainer (double): No checkpoints found in {directory}. Starting from scratch.", file=sys.stderr)
        return None
    return steps[-1]


def load_ckpt(directory, step, rank):
    """`CheckpointManager.load` (`trainer/ckpt.py:237-252`): `checkpoints/step_N/trainer` must exist
    (FileNotFoundError otherwise); each rank reads its shard (the double's stands for dcp's)."""
    path = directory / f"step_{step}" / "trainer"
    if not path.exists():
        raise FileNotFoundError(f"Checkpoint not found at {path}")
    shard = path / f"rank_{rank}.json"
    if not shard.exists():
        raise RuntimeError(f"{shard}: no shard of rank {rank} (the checkpoint was written by another world size)")
    state = json.loads(shard.read_text())
    if state["step"] != step:
        raise RuntimeError(f"{shard}: holds step {state['step']}, not {step}")
    return state


def save_ckpt(directory, step, rank, world, state, barriers):
    """`CheckpointManager.save` (`trainer/ckpt.py:254-272`): the master makes
    `checkpoints/step_N/trainer`, every rank writes its shard, a barrier."""
    path = directory / f"step_{step}" / "trainer"
    if rank == 0:
        path.mkdir(parents=True, exist_ok=True)
    barrier(barriers, f"ckpt_mkdir_{step}", rank, world)
    tmp = path / f"rank_{rank}.json.tmp"
    tmp.write_text(json.dumps({**state, "step": step, "world_size": world}) + "\n")
    tmp.rename(path / f"rank_{rank}.json")
    barrier(barriers, f"ckpt_{step}", rank, world)


class FileReceiver:
    """`FileSystemMicroBatchReceiver` (`transports/rollouts/filesystem.py:38-62`): polls for
    `rollouts/step_N/rank_<data_rank>.bin`, reads it, moves to the next step."""

    def __init__(self, output_dir, data_rank, step):
        self.output_dir, self.data_rank, self.step = output_dir, data_rank, step

    def path(self):
        return self.output_dir / "rollouts" / f"step_{self.step}" / f"rank_{self.data_rank}.bin"

    def receive(self):
        while not self.path().exists():
            time.sleep(0.01)
        where = str(self.path())
        payload = self.path().read_bytes()
        self.step += 1
        return payload, where


class ZmqReceiver:
    """`ZMQMicroBatchReceiver` (`transports/rollouts/zmq.py:90-135`): SUB to `data_rank|<r>|` on
    host:port, PUSH its data rank as READY to port+1, then one `[topic, payload]` per step."""

    def __init__(self, transport, data_rank):
        import zmq

        context = zmq.Context.instance()
        host, port, hwm = transport.get("host", "localhost"), transport.get("port", 5555), transport.get("hwm", 10)
        self.socket = context.socket(zmq.SUB)
        self.socket.setsockopt(zmq.RCVHWM, hwm)
        self.socket.connect(f"tcp://{host}:{port}")
        self.topic = b"data_rank|" + str(data_rank).encode() + b"|"
        self.socket.setsockopt(zmq.SUBSCRIBE, self.topic)
        self.ready = context.socket(zmq.PUSH)
        self.ready.setsockopt(zmq.SNDHWM, hwm)
        self.ready.connect(f"tcp://{host}:{port + 1}")
        self.ready.send(str(data_rank).encode())
        self.where = f"zmq tcp://{host}:{port} {self.topic.decode()}"

    def receive(self):
        topic, payload = self.socket.recv_multipart()
        if topic != self.topic:
            raise RuntimeError(f"{self.where}: got topic {topic!r}")
        return payload, self.where


def main():
    if len(sys.argv) < 3 or sys.argv[1] != "@":
        sys.exit("trainer (double): usage: trainer.py @ trainer.toml [--resume | --resume.step N]")
    config = parse_overrides(sys.argv[3:], load_config(sys.argv[2]))
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    output_dir = Path(config.get("output_dir", "outputs"))  # trainer.py config.output_dir, default "outputs"
    max_steps = config.get("max_steps")  # None: runs for ever
    cp = config.get("model", {}).get("cp", 1)
    lora = config.get("model", {}).get("lora")  # configs/trainer.py:256: LoRAConfig | None
    if world % cp:
        raise SystemExit(f"trainer config: model.cp = {cp} does not divide the world size {world}")
    # The data world is the dp mesh (`train.py:242-247`: parallel_dims.get_mesh("dp").size()) = world / cp;
    # a rank's data rank is rank // (world / dp) (`trainer/rl/data.py:174-175`): cp ranks share one file.
    dp = world // cp
    data_rank = rank // (world // dp)
    # rollout_transport defaults to ZMQ (`configs/trainer.py:620` at 559b447), weight_broadcast to filesystem.
    transport = config.get("rollout_transport", {"type": "zmq"})
    ckpt = config.get("ckpt")  # None: no checkpoints are saved (`setup_ckpt_manager`, ckpt.py:309-318)
    interval = (ckpt or {}).get("interval")
    interval_to_keep = interval
    checkpoints = ckpt_dir(output_dir, config)
    log_dir = output_dir / "trainer-double"
    barriers = log_dir / "barrier" / str(os.getppid())  # one barrier set per launch
    barriers.mkdir(parents=True, exist_ok=True)
    # `Progress.step` starts at 1 (`trainer/ckpt.py:28-32`); a resume loads the checkpoint of step S
    # and continues at S + 1 (`train.py:217-231`).
    state = {"tokens": 0, "samples": 0}
    start_step = 1
    checkpoint_step = resume_step(config, checkpoints, rank)
    if checkpoint_step is not None:
        loaded = load_ckpt(checkpoints, checkpoint_step, rank)
        state = {"tokens": loaded["tokens"], "samples": loaded["samples"]}
        start_step = checkpoint_step + 1
        if rank == 0:
            print(f"trainer (double): Resuming training from checkpoint step {checkpoint_step}", file=sys.stderr)
    # The incoming policy v{start_step - 1} is broadcast before the first batch is awaited (`train.py:271-277`).
    barrier(barriers, f"start_{start_step}", rank, world)
    if rank == 0:
        broadcast(output_dir, start_step - 1, interval_to_keep, lora)
    receiver = (
        FileReceiver(output_dir, data_rank, start_step)  # DataLoader(output_dir, progress.step, ...): train.py:243-248
        if transport.get("type", "zmq") == "filesystem"
        else ZmqReceiver(transport, data_rank)
    )
    step = start_step
    while True:
        is_last_step = max_steps is not None and step == max_steps  # train.py:266
        payload, where = receiver.receive()  # dataloader.wait_for_batch + get_batch (train.py:281-290)
        micro_batches = decode_micro_batches(payload)
        tokens = sum(len(batch[0]) for batch in micro_batches)
        with open(log_dir / f"rank_{rank}.jsonl", "a") as log:
            loss_tokens = sum(sum(1 for m in batch[1] if m) for batch in micro_batches)
            log.write(json.dumps({"step": step, "rank": rank, "data_rank": data_rank, "source": where,
                                  "micro_batches": len(micro_batches), "tokens": tokens, "loss_tokens": loss_tokens,
                                  "resumed_from": checkpoint_step}) + "\n")
        # train.py:299: `seq_len = micro_batches[0]["input_ids"].shape[1]`: an empty list raises IndexError here.
        seq_len = len(micro_batches[0][0])
        del seq_len
        check_shapes(micro_batches, where)
        state["tokens"] += tokens
        state["samples"] += sum(len(batch[5]) for batch in micro_batches)
        barrier(barriers, f"step_{step}", rank, world)
        if rank == 0:
            broadcast(output_dir, step, interval_to_keep, lora)  # train.py:582-597 (filesystem: every version)
        # train.py:602-616: a checkpoint on the interval, except the last step (written after the loop).
        if interval and not is_last_step and step % interval == 0:
            save_ckpt(checkpoints, step, rank, world, state, barriers)
        if is_last_step:  # then the loop ends (train.py:713-715)
            break
        step += 1
    if ckpt is not None:  # the final checkpoint (train.py:726-730)
        save_ckpt(checkpoints, step, rank, world, state, barriers)


if __name__ == "__main__":
    main()
