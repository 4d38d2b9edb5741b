export * from './embedded.ts';
export * from './model-router.ts';
export * from './opponent-pool.ts';
export * from './orchestrator.ts';
export * from './schedule.ts';
export * from './types.ts';
