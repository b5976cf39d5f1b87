#!/usr/bin/env bash
# tools/image/build-image-steps.sh: performs the Dockerfile's steps on the host,
# because no container engine runs on the development machines or in CI. The
# `ops` test image_build_steps runs it; docs/deploy.md explains the stand-in.
#
# What it does, step by step (the Dockerfile stage it mirrors in brackets):
#   1. checks that the build packages are installed        [build: apt-get install]
#   2. copies the tree into a build context, leaving out what
#      .dockerignore leaves out                             [docker build context, COPY . .]
#   3. configures and builds only the epochgate target in a
#      fresh build dir with the image's cmake flags         [build: RUN cmake ...]
#   4. installs the binary and the default config into a
#      staging root                                         [build: install -D ... /out]
#   5. maps every shared library the binary loads (ldd) to its
#      Debian package (dpkg -S) and fails unless each comes from
#      a runtime package or one of their dependencies, and
#      unless each runtime package is actually used         [runtime: apt-get install]
#   6. fills the staging root with the files of exactly those
#      packages (and their dependencies), like the runtime
#      stage, and runs `epochgate --version` and
#      `epochgate --check-config` inside it (chroot) as uid
#      10001: no other library, no writable file, no root   [runtime: USER 10001, ENTRYPOINT]
#   7. starts it there as uid 10001 on loopback ports with an
#      unreachable broker: /healthz answers 200, /readyz 503,
#      /metrics serves epochgate_* families, and SIGTERM drains
#      to exit 0                                            [docker run; STOPSIGNAL]
#
# Must never: install packages (it reports what is missing), touch anything
# outside its temp dirs, or differ from the Dockerfile in packages or flags.
#
# Usage:
#   tools/image/build-image-steps.sh [--source DIR] [--staging DIR] [--jobs N] [--keep]
#   tools/image/build-image-steps.sh --print build-packages|runtime-packages|cmake-flags
# Needs root for steps 6 and 7 (chroot, then the switch to uid 10001).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)

# Keep these three lists identical to the Dockerfile's.
build_packages=(
  build-essential cmake pkg-config python3
  libuv1-dev libspdlog-dev libfmt-dev libyaml-cpp-dev prometheus-cpp-dev node-llhttp libssl-dev
  libgtest-dev libgmock-dev
)
runtime_packages=(
  libuv1 libspdlog1.10 libfmt9 libyaml-cpp0.7 libprometheus-cpp-core1.0 libssl3
)
cmake_flags=(
  -DCMAKE_BUILD_TYPE=Release -DEPOCHGATE_PEERS=OFF -DEPOCHGATE_BENCH=OFF
)
image_uid=10001
image_gid=10001

staging=""
jobs=$(nproc)
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --print)
      case "${2:-}" in
        build-packages) printf '%s\n' "${build_packages[@]}" ;;
        runtime-packages) printf '%s\n' "${runtime_packages[@]}" ;;
        cmake-flags) printf '%s\n' "${cmake_flags[@]}" ;;
        *) echo "usage: $0 --print build-packages|runtime-packages|cmake-flags" >&2; exit 2 ;;
      esac
      exit 0 ;;
    --source) source_dir=$(cd "$2" && pwd); shift 2 ;;
    --staging) staging=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

step() { echo "== image step $*"; }
fail() { echo "image steps: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (chroot to the runtime root as uid $image_uid), like the image build"

work=$(mktemp -d /tmp/epochgate-image.XXXXXX)
chmod 0755 "$work"
run_pid=""
cleanup() {
  if [ -n "$run_pid" ] && kill -0 "$run_pid" 2>/dev/null; then kill -KILL "$run_pid"; fi
  if [ "$keep" = 1 ]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
context=$work/context
build=$work/build
[ -n "$staging" ] || staging=$work/rootfs
mkdir -p "$staging"
chmod 0755 "$staging"

step "1/7: build packages installed"
missing=()
for p in "${build_packages[@]}" "${runtime_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] || fail "packages not installed: ${missing[*]} (apt-get install them, as the Dockerfile does)"

step "2/7: build context from $source_dir (minus .dockerignore)"
/usr/bin/python3 "$here/runtime_root.py" context --source "$source_dir" --out "$context"

step "3/7: cmake ${cmake_flags[*]}; build target epochgate"
cmake -S "$context" -B "$build" "${cmake_flags[@]}" >"$work/cmake-configure.log" 2>&1 \
  || { tail -n 40 "$work/cmake-configure.log" >&2; fail "cmake configure"; }
nice cmake --build "$build" --target epochgate -j"$jobs" >"$work/cmake-build.log" 2>&1 \
  || { tail -n 60 "$work/cmake-build.log" >&2; fail "cmake --build --target epochgate"; }
binary=$(find "$build" -type f -name epochgate -perm -u+x | head -n 1)
[ -n "$binary" ] || fail "the build produced no epochgate binary"

step "4/7: install into $staging"
install -D -m 0755 "$binary" "$staging/usr/local/bin/epochgate"
install -D -m 0644 "$context/tools/image/epochgate.yaml" "$staging/etc/epochgate/epochgate.yaml"

step "5/7: every shared library comes from the runtime packages"
/usr/bin/python3 "$here/runtime_root.py" check-libs --binary "$staging/usr/local/bin/epochgate" \
  --packages "${runtime_packages[@]}"

step "6/7: runtime root with only those packages; run as uid $image_uid"
/usr/bin/python3 "$here/runtime_root.py" populate --root "$staging" --packages "${runtime_packages[@]}"
# chroot drops to uid/gid 10001 with no supplementary groups, as `USER 10001:10001`.
as_image_user=(chroot --userspec="$image_uid:$image_gid" --groups="$image_gid" "$staging")
version=$("${as_image_user[@]}" /usr/local/bin/epochgate --version) \
  || fail "epochgate --version as uid $image_uid in the runtime root"
echo "epochgate --version: $version"
"${as_image_user[@]}" /usr/local/bin/epochgate --check-config /etc/epochgate/epochgate.yaml \
  || fail "epochgate --check-config /etc/epochgate/epochgate.yaml as uid $image_uid in the runtime root"
# Read-only root: uid 10001 owns nothing in the image, so it can write nothing.
writable=$(find "$staging" -xdev \( -uid "$image_uid" -o -perm -o+w \) ! -type l -print | head -n 5)
[ -z "$writable" ] || fail "files writable by uid $image_uid in the image: $writable"
step "7/7: start as uid $image_uid on loopback; probes, metrics, SIGTERM drain"
# Three free loopback ports: bootstrap listener, admin, and a closed "broker".
read -r listen_port admin_port broker_port < <(/usr/bin/python3 -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
"${as_image_user[@]}" /usr/local/bin/epochgate --config /etc/epochgate/epochgate.yaml \
  --listen "127.0.0.1:$listen_port" --admin "127.0.0.1:$admin_port" \
  --bootstrap "127.0.0.1:$broker_port" --broker-port-base 0 --workers 1 >"$work/run.log" 2>&1 &
run_pid=$!
admin=http://127.0.0.1:$admin_port
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$admin$1" || true; }
for _ in $(seq 1 100); do
  [ "$(code /healthz)" = 200 ] && break
  kill -0 "$run_pid" 2>/dev/null || { cat "$work/run.log" >&2; fail "epochgate exited at start in the runtime root"; }
  sleep 0.1
done
[ "$(code /healthz)" = 200 ] || { cat "$work/run.log" >&2; fail "/healthz is not 200 within 10 s"; }
[ "$(code /readyz)" = 503 ] || fail "/readyz is $(code /readyz), expected 503 while no broker is reachable"
families=$(curl -s --max-time 2 "$admin/metrics" | grep -c '^# TYPE epochgate_' || true)
[ "$families" -gt 0 ] || fail "/metrics serves no epochgate_* family"
kill -TERM "$run_pid"
for _ in $(seq 1 400); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$run_pid" 2>/dev/null; then
  cat "$work/run.log" >&2
  fail "still running 40 s after SIGTERM"
fi
rc=0; wait "$run_pid" || rc=$?
run_pid=""
[ "$rc" = 0 ] || { cat "$work/run.log" >&2; fail "exit code $rc after SIGTERM, expected 0"; }
echo "started as uid $image_uid: /healthz 200, /readyz 503, $families metric families, SIGTERM -> exit 0"
echo "image steps: OK ($(du -sh "$staging" | cut -f1) runtime root)"
