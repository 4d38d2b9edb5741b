#!/usr/bin/env bash
# A private podman engine for troupe's podman runtime tests: Debian's podman serving its
# Docker-compatible API on its own socket, with its own storage, and no registry.
#
#   podman-engine.sh start   installs Debian's podman (+ catatonit, busybox-static) when missing,
#                            starts `podman system service` with its own --root / --runroot and
#                            socket, waits until it answers, and imports troupe-busybox:latest (a
#                            busybox-static rootfs, like docker-engine.sh's). When the default OCI
#                            runtime (crun) cannot start a container here (crun refuses a hybrid
#                            cgroup v1/v2 host), it installs runc and uses that instead.
#   podman-engine.sh stop    stops that service by the PID in its pidfile (TERM, then KILL)
#   podman-engine.sh env     prints `export TROUPE_PODMAN_HOST=<socket path>`
#   podman-engine.sh status  exits 0 when the engine answers
#
# Needs root. Settings (optional): TROUPE_PODMAN_DIR, the state directory (/var/lib/troupe-podman).
set -euo pipefail

STATE_DIR="${TROUPE_PODMAN_DIR:-/var/lib/troupe-podman}"
SOCKET="$STATE_DIR/podman.sock"
PIDFILE="$STATE_DIR/service.pid"
LOG="$STATE_DIR/service.log"
CONF="$STATE_DIR/containers.conf"

log() { echo "podman-engine: $*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=engine-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/engine-lib.sh"

# Every podman call uses the private storage, state and config; cgroupfs and file events because
# CI machines and containers often have no systemd.
podman_cli() {
  CONTAINERS_CONF="$CONF" podman --root "$STATE_DIR/storage" --runroot "$STATE_DIR/run" \
    --cgroup-manager=cgroupfs --events-backend=file "$@"
}

answers() { [ -S "$SOCKET" ] && curl -fsS --max-time 2 --unix-socket "$SOCKET" http://podman/_ping >/dev/null 2>&1; }



ensure_packages() {
  local missing=()
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  [ -x /usr/libexec/podman/catatonit ] || missing+=(catatonit)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  install_packages "${missing[@]}"
}

# The service inherits the caller's open-file limit (podman's default of 1048576 needs
# CAP_SYS_RESOURCE, which a CI container may lack).
write_conf() {
  mkdir -p "$STATE_DIR"
  {
    echo '[containers]'
    echo 'default_ulimits = []'
    if [ -n "${1:-}" ]; then
      echo '[engine]'
      echo "runtime = \"$1\""
    fi
  } >"$CONF"
}

import_busybox() {
  podman_cli image exists troupe-busybox:latest && return 0
  log "importing troupe-busybox:latest from /bin/busybox"
  busybox_rootfs_tar | podman_cli import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/sh"]' - troupe-busybox:latest >/dev/null
}

# One throwaway container with the settings the runtime uses (init, no network, a memory limit).
runs_a_container() {
  podman_cli run --rm --init --network none --memory 64m troupe-busybox:latest true >"$STATE_DIR/probe.log" 2>&1
}

choose_oci_runtime() {
  runs_a_container && return 0
  log "the default OCI runtime failed ($(tail -n 1 "$STATE_DIR/probe.log")); trying runc"
  command -v runc >/dev/null 2>&1 || install_packages runc
  write_conf runc
  runs_a_container || { cat "$STATE_DIR/probe.log" >&2; die "podman cannot run a container here"; }
}

launch() {
  rm -f "$SOCKET"
  log "starting podman system service (socket $SOCKET)"
  CONTAINERS_CONF="$CONF" setsid podman --root "$STATE_DIR/storage" --runroot "$STATE_DIR/run" \
    --cgroup-manager=cgroupfs --events-backend=file \
    system service --time=0 "unix://$SOCKET" </dev/null >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 300); do
    if answers; then return 0; fi
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 30 "$LOG" >&2
  die "podman system service did not start (log: $LOG)"
}

start() {
  [ "$(id -u)" = "0" ] || die "needs root"
  ensure_packages
  if running_pid >/dev/null && answers; then
    log "already running (pid $(running_pid))"
  else
    write_conf ""
    import_busybox
    choose_oci_runtime
    launch
    log "podman answers (pid $(running_pid), $(podman --version))"
  fi
  print_env
}


print_env() { echo "export TROUPE_PODMAN_HOST='$SOCKET'"; }

case "${1:-}" in
  start) start ;;
  stop) stop_engine ;;
  env) print_env ;;
  status) answers ;;
  *) die "usage: $0 start|stop|env|status" ;;
esac
