#!/usr/bin/env node
// The `troupe` command: the compiled CLI, run by plain node (no TypeScript loader).
await import('../dist/cli/main.js');
