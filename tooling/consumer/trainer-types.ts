// Consumer check (i): @troupe/trainer's public types under tsc --strict with skipLibCheck off and
// no DOM lib: its declarations must not reach tfjs's (which need DOM and fail strict checks).
import { DEFAULT_CONFIG, readRunConfigFile, type TrainResult, train } from '@troupe/trainer';

const config = await readRunConfigFile(DEFAULT_CONFIG);
const result: TrainResult = await train({ config: { ...config, maxSteps: 1 }, out: 'runs/typed' });
export const steps: number = result.steps;
