/**
 * The PEP 723 runner for Terminus 2: builds harbor's `Terminus2` agent with a litellm model at
 * the interception endpoint and runs it on the instruction in a local tmux session. Never run by
 * the tests (harbor comes from PyPI, out of reach of the test sandbox): the harbor API it calls is
 * unverified.
 */
export function terminus2Runner(harborVersion: string): string {
  return `# /// script
# requires-python = ">=3.12"
# dependencies = ["harbor==${harborVersion}"]
# ///
import argparse, asyncio, pathlib, sys

from harbor.agents.terminus_2 import Terminus2
from harbor.environments.local import LocalEnvironment


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--instruction-file", required=True)
    parser.add_argument("--logs-dir", required=True)
    args = parser.parse_args()
    instruction = pathlib.Path(args.instruction_file).read_text()
    logs = pathlib.Path(args.logs_dir)
    logs.mkdir(parents=True, exist_ok=True)
    agent = Terminus2(logs_dir=logs, model_name=args.model, api_base=args.api_base)
    environment = LocalEnvironment(workdir=pathlib.Path.cwd())
    await agent.setup(environment)
    result = await agent.run(instruction, environment)
    print(getattr(result, "final_message", "") or "")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
`;
}
