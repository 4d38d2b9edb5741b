export * from './docker-exec.ts';
export * from './docker-runtime.ts';
export * from './docker-sandbox.ts';
export * from './host-forwarder.ts';
export * from './tar-archive.ts';
