#!/usr/bin/env bash
# CI helper: starts troupe's private Docker engine (tooling/scripts/docker-engine.sh start) and
# prints shell lines to eval, exporting the socket for the Docker runtime tests and benchmarks:
#
#   eval "$(tooling/scripts/ci-docker.sh)"
#   trap 'tooling/scripts/docker-engine.sh stop' EXIT
#
# Progress goes to stderr; stdout holds only the export lines.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# The tests need only troupe-busybox; set TROUPE_DOCKER_IMAGES="busybox debian" to build both.
engine_env="$(TROUPE_DOCKER_IMAGES="${TROUPE_DOCKER_IMAGES-busybox}" "$here/docker-engine.sh" start)"
socket="$(printf '%s\n' "$engine_env" | sed -n 's/^TROUPE_DOCKER_HOST=//p')"
pid="$(cat "${TROUPE_DOCKER_DIR:-/var/lib/troupe-docker}/dockerd.pid")"
[ -S "$socket" ] || { echo "ci-docker: no engine socket at $socket" >&2; exit 1; }
echo "export TROUPE_DOCKER_HOST='$socket'"
echo "export TROUPE_DOCKER_PID='$pid'"
