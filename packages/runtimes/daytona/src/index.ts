export * from './daytona-runtime.ts';
