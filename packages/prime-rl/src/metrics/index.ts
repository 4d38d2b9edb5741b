export * from './role-metrics.ts';
