export {};
export * from './algorithms/index.ts';
export * from './samples/index.ts';
export * from './metrics/index.ts';
