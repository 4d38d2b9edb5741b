#!/usr/bin/env bash
# A private Docker engine for troupe's Docker runtime tests and benchmarks, with no registry.
#
#   docker-engine.sh start   installs Debian's docker.io (+ busybox-static, debootstrap) when missing,
#                            starts dockerd with its own data-root / exec-root / pidfile / socket,
#                            waits until it answers, and builds the local images:
#                              troupe-busybox:latest   docker import of a busybox-static rootfs (~1 s)
#                              troupe-debian:bookworm  debootstrap --variant=minbase bookworm + bash,
#                                                      python3 (~30-60 s once; the tarball is cached)
#   docker-engine.sh stop    stops that dockerd by the PID in its pidfile (TERM, then KILL)
#   docker-engine.sh env     prints DOCKER_HOST=unix://... and TROUPE_DOCKER_HOST=<socket path>
#   docker-engine.sh status  exits 0 when the engine answers
#
# Needs root (dockerd). Settings (all optional):
#   TROUPE_DOCKER_DIR     state directory: data-root, exec-root, socket, pidfile, log (/var/lib/troupe-docker)
#   TROUPE_CACHE_DIR      where the debootstrap tarball is cached (/var/cache/troupe)
#   TROUPE_DOCKER_IMAGES  images to build at start: "busybox debian" (default), "busybox", or ""
#   TROUPE_DEBIAN_MIRROR  Debian mirror for debootstrap (default: the first URIs of /etc/apt/sources*)
set -euo pipefail

STATE_DIR="${TROUPE_DOCKER_DIR:-/var/lib/troupe-docker}"
CACHE_DIR="${TROUPE_CACHE_DIR:-/var/cache/troupe}"
IMAGES="${TROUPE_DOCKER_IMAGES-busybox debian}"
DATA_ROOT="$STATE_DIR/data"
EXEC_ROOT="$STATE_DIR/exec"
SOCKET="$STATE_DIR/docker.sock"
PIDFILE="$STATE_DIR/dockerd.pid"
LOG="$STATE_DIR/dockerd.log"

log() { echo "docker-engine: $*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=engine-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/engine-lib.sh"

docker_cli() { docker -H "unix://$SOCKET" "$@"; }

answers() { [ -S "$SOCKET" ] && docker_cli version --format '{{.Server.Version}}' >/dev/null 2>&1; }


ensure_packages() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v docker >/dev/null 2>&1 || missing+=(docker.io)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  if [[ " $IMAGES " == *" debian "* ]] && ! command -v debootstrap >/dev/null 2>&1; then missing+=(debootstrap); fi
  install_packages "${missing[@]}"
}

storage_driver() {
  mkdir -p "$DATA_ROOT"
  local fs
  fs="$(stat -f -c %T "$DATA_ROOT")"
  # overlay2 cannot stack on overlayfs; vfs (full copies) works anywhere.
  if [ "$fs" = "overlayfs" ] || ! grep -qw overlay /proc/filesystems; then echo vfs; else echo overlay2; fi
}

launch() {
  local driver="$1"
  mkdir -p "$STATE_DIR" "$DATA_ROOT" "$EXEC_ROOT"
  rm -f "$SOCKET"
  log "starting dockerd (storage driver $driver, socket $SOCKET)"
  setsid dockerd \
    --data-root "$DATA_ROOT" \
    --exec-root "$EXEC_ROOT" \
    --pidfile "$PIDFILE" \
    -H "unix://$SOCKET" \
    --iptables=false --ip6tables=false --bridge=none \
    --storage-driver="$driver" \
    --log-level=warn \
    </dev/null >"$LOG" 2>&1 &
  local launched=$!
  for _ in $(seq 1 300); do
    if answers; then return 0; fi
    kill -0 "$launched" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

build_busybox() {
  docker_cli image inspect troupe-busybox:latest >/dev/null 2>&1 && return 0
  log "building troupe-busybox:latest from /bin/busybox"
  busybox_rootfs_tar | docker_cli import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/sh"]' - troupe-busybox:latest >/dev/null
}

debian_mirror() {
  if [ -n "${TROUPE_DEBIAN_MIRROR:-}" ]; then echo "$TROUPE_DEBIAN_MIRROR"; return; fi
  local uri
  uri="$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n1 | awk '{print $2}')" || true
  if [ -z "$uri" ]; then
    uri="$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | grep -v security | head -n1 | awk '{print $2}')" || true
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

build_debian() {
  docker_cli image inspect troupe-debian:bookworm >/dev/null 2>&1 && return 0
  local tarball="$CACHE_DIR/debian-bookworm-minbase.tar.gz"
  if [ ! -s "$tarball" ]; then
    local mirror rootfs
    mirror="$(debian_mirror)"
    rootfs="$(mktemp -d)"
    log "debootstrap bookworm (minbase + bash, python3) from $mirror; cached at $tarball"
    debootstrap --variant=minbase --include=bash,python3,ca-certificates bookworm "$rootfs" "$mirror" >"$STATE_DIR/debootstrap.log" 2>&1 ||
      { tail -n 20 "$STATE_DIR/debootstrap.log" >&2; rm -rf "$rootfs"; die "debootstrap failed"; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    mkdir -p "$CACHE_DIR" "$rootfs/work"
    tar -C "$rootfs" -czf "$tarball.partial" . && mv "$tarball.partial" "$tarball"
    rm -rf "$rootfs"
  fi
  log "importing troupe-debian:bookworm"
  docker_cli import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' "$tarball" troupe-debian:bookworm >/dev/null
}

start() {
  [ "$(id -u)" = "0" ] || die "needs root (dockerd)"
  ensure_packages
  if running_pid >/dev/null && answers; then
    log "already running (pid $(running_pid))"
  else
    local driver
    driver="$(storage_driver)"
    if ! launch "$driver"; then
      stop_engine quietly
      if [ "$driver" != vfs ]; then
        log "dockerd did not come up with $driver; retrying with vfs"
        launch vfs || { tail -n 30 "$LOG" >&2; die "dockerd did not start (log: $LOG)"; }
      else
        tail -n 30 "$LOG" >&2
        die "dockerd did not start (log: $LOG)"
      fi
    fi
    log "dockerd answers (pid $(running_pid), $(docker_cli version --format '{{.Server.Version}}'))"
  fi
  for image in $IMAGES; do
    case "$image" in
      busybox) build_busybox ;;
      debian) build_debian ;;
      *) die "unknown image '$image' in TROUPE_DOCKER_IMAGES" ;;
    esac
  done
  print_env
}


print_env() {
  echo "DOCKER_HOST=unix://$SOCKET"
  echo "TROUPE_DOCKER_HOST=$SOCKET"
}

case "${1:-}" in
  start) start ;;
  stop) stop_engine ;;
  env) print_env ;;
  status) answers ;;
  *) die "usage: $0 start|stop|env|status" ;;
esac
