// Worker entry: registers tsx's TypeScript loader in this thread (loaders registered in the
// parent are not inherited by worker threads), then loads the TypeScript worker.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
