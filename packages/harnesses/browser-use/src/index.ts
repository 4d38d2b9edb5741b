export * from './browser-use-harness.ts';
