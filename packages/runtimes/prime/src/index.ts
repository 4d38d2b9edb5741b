export * from './prime-runtime.ts';
