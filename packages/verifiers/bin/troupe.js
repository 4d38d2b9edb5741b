#!/usr/bin/env node
// Runs the TypeScript CLI through tsx's loader (the package ships its sources).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
