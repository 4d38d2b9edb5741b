export * from './pi-harness.ts';
