export * from './scoring.ts';
export * from './task.ts';
export * from './taskset.ts';
