export * from './kubernetes-runtime.ts';
