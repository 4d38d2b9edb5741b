# Shared by docker-engine.sh and podman-engine.sh (sourced, never run). Each caller defines
# log, die, PIDFILE and SOCKET before sourcing it.

# The PID in $PIDFILE when that process is alive.
running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid="$(cat "$PIDFILE")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# apt-get install of the named packages (none: nothing), waiting for another apt's lock.
install_packages() {
  [ $# -eq 0 ] && return 0
  log "installing $*"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@" >&2
}

# A tar stream (on stdout) of a busybox-static root filesystem: every applet linked, a /work folder,
# root and nobody users. The engines import it as troupe-busybox:latest.
busybox_rootfs_tar() {
  local rootfs
  rootfs="$(mktemp -d)"
  mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,root,tmp,work,proc,sys,dev,var/tmp}
  chmod 1777 "$rootfs/tmp" "$rootfs/var/tmp"
  cp /bin/busybox "$rootfs/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ -e "$rootfs/bin/$applet" ] || ln -s busybox "$rootfs/bin/$applet"
  done
  ln -s ../../bin/env "$rootfs/usr/bin/env"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
  tar -C "$rootfs" -c .
  rm -rf "$rootfs"
}

# Stops the engine by the PID in $PIDFILE (TERM, then KILL after 15 s) and removes its pidfile and
# socket. `stop_engine quietly` logs nothing.
stop_engine() {
  local pid
  pid="$(running_pid)" || { [ "${1:-}" = quietly ] || log "not running"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$pid did not stop on TERM; sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE" "$SOCKET"
  [ "${1:-}" = quietly ] || log "stopped (pid $pid)"
}
