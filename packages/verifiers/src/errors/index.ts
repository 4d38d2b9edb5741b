export * from './troupe-error.ts';
