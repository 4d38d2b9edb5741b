/** The text of `troupe --help` (and `troupe eval --help`). */
export const HELP = `troupe — run agents on tasksets, record trainable traces

Usage:
  troupe eval [options]            run an env on a taskset against a model endpoint
  troupe validate [options]        check a config and print it resolved: builds the env, roles
                                   and taskset, calls no model, boots nothing, writes nothing;
                                   --only-noop / --only-gold boot each task's sandbox and score it
  troupe view <run-dir> [--html FILE] [--port N]
                                   browse a run's episodes (or write one self-contained HTML file);
                                   package @troupe/viewer: npm install @troupe/viewer
  troupe view <folder> | <run-a> <run-b> --html FILE
                                   list a folder's runs and compare two (per role, task by task)
  troupe export <run-dir> --format chat|sft|preference [--role R] [--where EXPR] [--tokens] [-o FILE]
                                   traces as JSONL for TRL (troupe export --help)
  troupe merge <run-dir>... --out DIR
                                   merge shard runs (eval --shard i/n) into one run
  troupe replay <run-dir> [--config FILE] [--num-rescores K]
                                   re-score saved traces with the same or new rewards and judges
  troupe init env|harness|runtime <name> [--dir D]
                                   scaffold a package of your own env, harness or runtime (troupe init --help)
  troupe rerun <run-dir> --swap ROLE=MODEL [-b URL]
                                   re-run a run's tasks with one seat swapped; paired reward change per role
  troupe debug --env ID|MODULE --task I [-f FILE] -- COMMAND...
                                   run a command in task I's sandbox, booted as eval would (troupe debug --help)

Training (package @troupe/trainer: npm install @troupe/trainer; each command runs its bin):
  troupe train [-f run.toml] [--run-dir DIR] [--resume|--clean] [-s PATH=VALUE]...
                                   train a policy on envs (troupe train --help)
  troupe crossplay | serve-inference | serve-trainer ...
                                   play, compare and serve training checkpoints (troupe train --help)

Eval options:
  -f, --config FILE      TOML or JSON config; CLI options override it
  -m, --model NAME       model name (required unless in the config)
  -b, --base-url URL     OpenAI-compatible endpoint (default http://127.0.0.1:8000/v1)
      --api-key-var NAME environment variable holding the API key (default OPENAI_API_KEY)
  -e, --env ID           env id (default single-agent)
  -t, --taskset ID|FILE  taskset id (default arithmetic) or a .jsonl file
  -n, --num-tasks N      tasks to run (the first N of the selection)
      --select FIELD=VALUE which tasks (repeatable; recorded in config.json, so --resume and
                         replay cover the same ones): indices=0-9,20  keys=K1,K2  types=T1,T2
                         sample=N (a seeded draw of what is left, in taskset order)  seed=S
  -r, --rollouts N       episodes per task (default 1)
  -c, --concurrency N    episodes at once (default 32)
      --harness ID       harness for every role (e.g. bash, null, claude_code)
      --runtime ID       runtime for every role (e.g. local, docker)
      --temperature X    sampling temperature
      --top-p X, --top-k N, --min-p X, --seed N, --stop TEXT (repeatable), --reasoning-effort LEVEL
                         more sampling settings (provider pass-through: --set sampling.extra.KEY=VALUE)
      --max-tokens N     max tokens per call
      --max-turns N      max model calls per agent run
  -o, --outputs DIR      root of run directories (default outputs)
      --resume DIR       continue a run: keep its complete episodes, run the rest (refused
                         when another flag or config changes the run's config.json);
                         --run-dir DIR --resume is the same, as troupe train spells it
      --allow-failures   exit 0 even when episodes failed
      --shard I/N        run only shard I of N (1-based) of tasks × rollouts; troupe merge joins them
      --no-preflight     skip the checks made before a run: the endpoint (GET <base-url>/models)
                         and each runtime's engine (e.g. the Docker socket answers)
      --dry-run          print the resolved config and the task count; call nothing, create nothing
      --run-dir DIR      write the run to DIR instead of <outputs>/<env>--<model>--<harness>--<hex>
      --clean            replace --run-dir DIR when it exists (refused with --resume)
      --only-noop        validate only: score each task with no agent action (its sandbox booted
                         and set up, an empty reply, no model call) and list those already
                         scoring >= 1 as JSON lines; exit 3 when any does
      --only-gold        validate only: score each task with its gold reply (its data's gold,
                         else answer) as the final message; JSON lines; exit 3 when a gold
                         reply scores below 1 (tasks without one are listed, not failed)
  -s, --set PATH=VALUE   set any config field, e.g. --set env.agent.max_turns=4 (repeatable)
  -h, --help

View options:
      --html FILE        write one self-contained HTML file instead of serving
      --port N           port to serve on (default: a free one)
      --host ADDR        address to bind (default 127.0.0.1)

Exit codes:
  0  every episode ok (or --allow-failures)     2  bad config or flag (nothing was run)
  3  some episodes failed                        4  every episode failed
  1  an internal error                           130 interrupted (--resume continues)
`;

/** Exit codes of `troupe eval` (documented in --help and the README). */
export const EXIT_CODES = { ok: 0, internal: 1, config: 2, someFailed: 3, allFailed: 4, interrupted: 130 } as const;
