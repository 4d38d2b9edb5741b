#!/usr/bin/env bash
# publint and @arethetypeswrong/cli on every public package (run after `pnpm build`): what a user's
# bundler or TypeScript would trip on in the published package.json / exports / types.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
status=0
for manifest in packages/*/package.json packages/*/*/package.json apps/*/package.json; do
  dir="$(dirname "$manifest")"
  [ "$(node -p "require('./$manifest').private ? 1 : 0")" = 1 ] && continue
  echo "== $dir"
  (cd "$dir" && pnpm exec publint --strict) || status=1
  # ESM only: the CommonJS-resolution rows are not ours to satisfy.
  (cd "$dir" && pnpm exec attw --pack . --profile esm-only --format ascii) || status=1
done
exit $status
