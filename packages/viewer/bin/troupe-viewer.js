#!/usr/bin/env node
// The @troupe/viewer bin: `troupe view` (the troupe CLI of @troupe/verifiers) runs it with
// `view <args>`; it also runs on its own (`troupe-viewer <run-dir>`).
await import('../dist/cli.js');
