/**
 * Runs a ScriptedModelServer in its own process (as a real model server would be), answering
 * arithmetic prompts after `latencyMs`. Prints `{"url": …}` on stdout once listening; exits on
 * SIGTERM or when stdin closes.
 */
import { ScriptedModelServer } from '../../src/testing/scripted-model-server.ts';
import { answerOf } from '../../test/reliability/support/arithmetic-script.ts';

const latencyMs = Number(process.argv[2] ?? 50);
const server = await ScriptedModelServer.start({ latencyMs, keepLog: false, script: (request) => answerOf(request) });
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
const stop = async () => {
  await server.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
