export * from './chat.ts';
export * from './dialect.ts';
export * from './messages.ts';
export * from './responses.ts';
