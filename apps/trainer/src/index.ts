export * from './default-config.ts';
export * from './report.ts';
export * from './run.ts';
export * from './run-config.ts';
