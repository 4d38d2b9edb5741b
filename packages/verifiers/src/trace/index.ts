export * from './episode.ts';
export * from './trace.ts';
export * from './trace-schema.ts';
