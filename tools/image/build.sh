#!/usr/bin/env bash
# tools/image/build.sh [TAG]: builds the epochgate image from the Dockerfile
# with podman, the way docs/deploy.md tells users to:
#   podman build --network=host -t epochgate:VERSION .
# in the repository root, after base-images.sh has put debian:bookworm and
# debian:bookworm-slim into podman's store (no registry is needed). TAG
# defaults to epochgate:VERSION (CMake's project version). Prints the image
# size; exit 77 where podman cannot run (see podman.sh --check).
#   tools/image/build.sh --print-command   the podman build line, for the docs check
#
# podman's layer cache keeps each Dockerfile step: a Dockerfile change
# rebuilds from the changed step, a source change from `COPY . .`.
# Must never: push or pull images, or write inside the clone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
version=$(sed -n 's/^project(epochgate VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
[ -n "$version" ] || { echo "no project(epochgate VERSION ...) in CMakeLists.txt" >&2; exit 1; }

if [ "${1:-}" = --print-command ]; then
  echo "podman build --network=host -t epochgate:$version ."
  exit 0
fi
tag=${1:-epochgate:$version}

rc=0
"$here/podman.sh" --check || rc=$?
[ "$rc" = 0 ] || exit "$rc"
"$here/base-images.sh" >/dev/null

started=$SECONDS
cd "$repo"
# --network=host: build steps run apt-get; a sandbox has no container network.
"$here/podman.sh" build --network=host -t "$tag" . >&2
bytes=$("$here/podman.sh" image inspect --format '{{.Size}}' "$tag")
echo "image $tag: $bytes bytes ($((bytes / 1048576)) MiB), built in $((SECONDS - started)) s" >&2
echo "$tag"
