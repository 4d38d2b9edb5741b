/**
 * The PEP 723 runner for `browser_use`: an OpenAI-chat tool loop (to interception) with one
 * `browser` tool whose Python code is piped to `browser-harness` (CDP helpers preloaded), against
 * a headless Chromium it starts in the sandbox unless `--cdp-url` is given. Never run by the tests
 * (its packages come from PyPI, out of reach of the test sandbox).
 */
export function browserUseRunner(browserHarnessVersion: string): string {
  return `# /// script
# requires-python = ">=3.11"
# dependencies = ["openai>=1.40", "browser-harness==${browserHarnessVersion}"]
# ///
import argparse, json, os, pathlib, subprocess, sys, time

from openai import OpenAI

TOOL = {"type": "function", "function": {"name": "browser", "description": "Run Python against the browser (browser-harness helpers are imported).",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompt-file", required=True)
    parser.add_argument("--cdp-url")
    parser.add_argument("--max-turns", type=int, default=50)
    args = parser.parse_args()
    chromium = None
    env = dict(os.environ)
    if not args.cdp_url:
        chromium = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--remote-debugging-port=9222", "about:blank"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)
        args.cdp_url = "http://127.0.0.1:9222"
    env["BU_CDP_URL"] = args.cdp_url
    client = OpenAI(base_url=args.base_url, api_key=os.environ["OPENAI_API_KEY"], max_retries=0)
    messages = [{"role": "user", "content": pathlib.Path(args.prompt_file).read_text()}]
    try:
        for _ in range(args.max_turns):
            reply = client.chat.completions.create(model=args.model, messages=messages, tools=[TOOL]).choices[0].message
            messages.append(reply.model_dump(exclude_none=True))
            if not reply.tool_calls:
                print(reply.content or "")
                return 0
            for call in reply.tool_calls:
                code = json.loads(call.function.arguments or "{}").get("code", "")
                run = subprocess.run(["browser-harness"], input=code, capture_output=True, text=True, env=env, timeout=300)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": (run.stdout + run.stderr)[-20000:]})
        return 1
    finally:
        if chromium:
            chromium.terminate()


if __name__ == "__main__":
    sys.exit(main())
`;
}
