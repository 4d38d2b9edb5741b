#!/usr/bin/env bash
# Runs a command on a machine whose only network is the npm registry: a new network namespace (only
# loopback), a private /etc/hosts in which registry.npmjs.org is 127.0.0.1, and a relay from
# 127.0.0.1:443 through a Unix socket to the real registry (registry-relay.mjs). Every other name
# fails to resolve and every other address is unreachable, whatever a program's own settings (an
# install script that downloads from nuget or GitHub fails). The command sees no proxy variable,
# .npmrc or flag: npm talks TLS to the real registry and checks its certificate.
# Needs root or unprivileged user namespaces (unshare), and iproute2's `ip`.
# Usage: bash tooling/scripts/registry-only.sh COMMAND [ARG]...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

if [ "${1:-}" = --inside ]; then
  # In the namespaces: loopback up, the private hosts file, then the relay's inner end runs COMMAND.
  dir="$2"
  shift 2
  ip link set lo up
  printf '127.0.0.1 localhost\n::1 localhost\n127.0.0.1 registry.npmjs.org\n' >"$dir/hosts"
  mount --bind "$dir/hosts" /etc/hosts
  exec node "$here/registry-relay.mjs" inside "$dir/registry.sock" -- "$@"
fi

[ $# -gt 0 ] || { echo "usage: registry-only.sh COMMAND [ARG]..." >&2; exit 2; }
command -v ip >/dev/null || { echo "registry-only.sh: needs iproute2's ip (apt-get install iproute2)" >&2; exit 1; }
dir="$(mktemp -d "${TMPDIR:-/tmp}/registry-only-XXXXXX")"
node "$here/registry-relay.mjs" outside "$dir/registry.sock" >"$dir/relay.out" &
relay=$!
trap 'kill "$relay" 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
  [ -s "$dir/relay.out" ] && break
  sleep 0.05
done
[ -s "$dir/relay.out" ] || { echo "registry-only.sh: the relay did not start" >&2; exit 1; }
flags=(--net --mount --fork)
[ "$(id -u)" = 0 ] || flags+=(--map-root-user)
status=0
unshare "${flags[@]}" bash "$0" --inside "$dir" "$@" || status=$?
exit "$status"
