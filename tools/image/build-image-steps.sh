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
#
# Must never: install packages (it reports what is missing), touch anything
# outside its temp dirs, or differ from the Dockerfile in packages or flags.
#
# Usage:
#   tools/image/build-image-steps.sh [--source DIR] [--staging DIR] [--jobs N] [--keep]
#   tools/image/build-image-steps.sh --print build-packages|runtime-packages|cmake-flags
# Needs root for step 6 (chroot, then the switch to uid 10001).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)

# Keep these three lists identical to the Dockerfile's.
build_packages=(
  build-essential cmake pkg-config python3
  libuv1-dev libspdlog-dev libfmt-dev libyaml-cpp-dev prometheus-cpp-dev node-llhttp
  libgtest-dev libgmock-dev
)
runtime_packages=(
  libuv1 libspdlog1.10 libfmt9 libyaml-cpp0.7 libprometheus-cpp-core1.0
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
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

step() { echo "== image step $*"; }
fail() { echo "image steps: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (chroot to the runtime root as uid $image_uid), like the image build"

work=$(mktemp -d /tmp/epochgate-image.XXXXXX)
chmod 0755 "$work"
cleanup() {
  if [ "$keep" = 1 ]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
context=$work/context
build=$work/build
[ -n "$staging" ] || staging=$work/rootfs
mkdir -p "$staging"
chmod 0755 "$staging"

step "1/6: build packages installed"
missing=()
for p in "${build_packages[@]}" "${runtime_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] || fail "packages not installed: ${missing[*]} (apt-get install them, as the Dockerfile does)"

step "2/6: build context from $source_dir (minus .dockerignore)"
/usr/bin/python3 "$here/runtime_root.py" context --source "$source_dir" --out "$context"

step "3/6: cmake ${cmake_flags[*]}; build target epochgate"
cmake -S "$context" -B "$build" "${cmake_flags[@]}" >"$work/cmake-configure.log" 2>&1 \
  || { tail -n 40 "$work/cmake-configure.log" >&2; fail "cmake configure"; }
nice cmake --build "$build" --target epochgate -j"$jobs" >"$work/cmake-build.log" 2>&1 \
  || { tail -n 60 "$work/cmake-build.log" >&2; fail "cmake --build --target epochgate"; }
binary=$(find "$build" -type f -name epochgate -perm -u+x | head -n 1)
[ -n "$binary" ] || fail "the build produced no epochgate binary"

step "4/6: install into $staging"
install -D -m 0755 "$binary" "$staging/usr/local/bin/epochgate"
install -D -m 0644 "$context/tools/image/epochgate.yaml" "$staging/etc/epochgate/epochgate.yaml"

step "5/6: every shared library comes from the runtime packages"
/usr/bin/python3 "$here/runtime_root.py" check-libs --binary "$staging/usr/local/bin/epochgate" \
  --packages "${runtime_packages[@]}"

step "6/6: runtime root with only those packages; run as uid $image_uid"
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
echo "image steps: OK ($(du -sh "$staging" | cut -f1) runtime root)"
