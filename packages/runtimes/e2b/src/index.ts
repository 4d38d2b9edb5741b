export * from './e2b-runtime.ts';
