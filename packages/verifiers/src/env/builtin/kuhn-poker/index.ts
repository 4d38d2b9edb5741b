export * from './env.ts';
export * from './game.ts';
export * from './prompts.ts';
export * from './training.ts';
