export * from './malformed-reply-error.ts';
export * from './troupe-error.ts';
export * from './wire-request-error.ts';
