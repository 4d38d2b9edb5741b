import { InterceptionServer, type InterceptionServerOptions } from '../interception/interception-server.ts';
import { type RolloutLimits, RolloutSession } from '../interception/rollout-session.ts';
import type { Sampling } from '../model/model-client.ts';
import type { OpenAICompatibleClientOptions } from '../model/openai-client.ts';
import { Trace } from '../trace/trace.ts';
import { type ScriptedModelServer, type ScriptedModelServerOptions, scriptedClient } from './scripted-model-server.ts';

/** Options of `startInterceptedRollout`. */
export interface InterceptedRolloutOptions extends ScriptedModelServerOptions {
  /** The run's model imposed by the session (default `policy-model`). */
  runModel?: string;
  sampling?: Sampling;
  limits?: RolloutLimits;
  client?: Partial<OpenAICompatibleClientOptions>;
  interception?: InterceptionServerOptions;
  /** The session's secret works only from the process of its first call (`bindCaller`). */
  bindCaller?: boolean;
}

/** One rollout wired end to end: program → InterceptionServer → RolloutSession → client → scripted model. */
export interface InterceptedRollout {
  interception: InterceptionServer;
  model: ScriptedModelServer;
  session: RolloutSession;
  trace: Trace;
  /** `${interception.url}/v1` — give it to the program with `session.secret` as its key. */
  baseUrl: string;
  close(): Promise<void>;
}

/**
 * Starts a scripted model server, an interception server and a session registered on it: the
 * full path a program's model calls take, for tests.
 */
export async function startInterceptedRollout(options: InterceptedRolloutOptions): Promise<InterceptedRollout> {
  const { runModel, sampling, limits, interception: interceptionOptions, bindCaller, ...scripted } = options;
  const { client, server: model } = await scriptedClient(scripted);
  const trace = new Trace({ task: { key: 'task-0', hash: 'h0', data: {} }, agent: { name: 'solver', trainable: true } });
  const session = new RolloutSession({
    trace,
    client,
    model: runModel ?? 'policy-model',
    ...(sampling ? { sampling } : {}),
    ...(limits ? { limits } : {}),
    ...(bindCaller ? { bindCaller } : {}),
  });
  const interception = new InterceptionServer(interceptionOptions);
  await interception.start();
  const { baseUrl } = interception.register(session);
  return {
    interception,
    model,
    session,
    trace,
    baseUrl,
    close: async () => {
      await interception.close();
      await model.close();
    },
  };
}
