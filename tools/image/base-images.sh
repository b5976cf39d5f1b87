#!/usr/bin/env bash
# tools/image/base-images.sh: makes the two base images the Dockerfile names,
# debian:SUITE and debian:SUITE-slim, without a registry: mmdebstrap builds a
# minbase root filesystem from the Debian archive, a slim copy drops the
# documentation the way the official slim image does, and `podman import`
# turns each into an image. SUITE is the Dockerfile's DEBIAN_RELEASE default.
#
# Cache: ${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}/image-base/SUITE-KEY/
# (rootfs.tar, slim.tar, .complete). KEY hashes the recipe (the mmdebstrap
# arguments and slim_rootfs.py), so a change of recipe rebuilds; the imported images carry the key as a label and are
# imported again when podman's copy is missing or carries another key.
# Delete the cache directory to pick up newer Debian packages.
#
# Must never: pull from a registry, or touch anything outside the cache and
# podman's image store. Needs root (mmdebstrap --mode=root, rootful podman).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
podman=$here/podman.sh

suite=$(sed -n 's/^ARG DEBIAN_RELEASE=\([a-z]*\)$/\1/p' "$repo/Dockerfile" | head -n 1)
[ -n "$suite" ] || { echo "no ARG DEBIAN_RELEASE=... in $repo/Dockerfile" >&2; exit 1; }
# Merged /usr by hook (not the usrmerge package, which drags in perl);
# unsafe-io skips dpkg's fsync per file, which dominates on a busy disk, and
# stays set in the image so the Dockerfile's apt-get runs fast too.
recipe=(--variant=minbase --mode=root --format=tar
        --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
        --dpkgopt=force-unsafe-io --aptopt='Acquire::Languages "none"')
mirrors=("deb http://deb.debian.org/debian $suite main"
         "deb http://deb.debian.org/debian $suite-updates main"
         "deb http://deb.debian.org/debian-security $suite-security main")
key=$( (printf '%s\n' "$suite" "${recipe[@]}" "${mirrors[@]}"; cat "$here/slim_rootfs.py") \
      | sha256sum | cut -c1-12)
cache=${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}
dir=$cache/image-base/$suite-$key
label=org.epochgate.base-key

if [ ! -f "$dir/.complete" ]; then
  command -v mmdebstrap >/dev/null || { echo "mmdebstrap is not installed (tools/setup.sh installs it)" >&2; exit 1; }
  rm -rf "$dir"
  mkdir -p "$dir"
  started=$SECONDS
  echo "base images: mmdebstrap --variant=minbase $suite into $dir" >&2
  mmdebstrap "${recipe[@]}" "$suite" "$dir/rootfs.tar" "${mirrors[@]}" \
    >"$dir/mmdebstrap.log" 2>&1 || { tail -n 30 "$dir/mmdebstrap.log" >&2; exit 1; }
  /usr/bin/python3 "$here/slim_rootfs.py" "$dir/rootfs.tar" "$dir/slim.tar"
  touch "$dir/.complete"
  echo "base images: root filesystems built in $((SECONDS - started)) s" >&2
fi

import() {  # import TARBALL NAME
  local have
  have=$("$podman" image inspect --format "{{index .Labels \"$label\"}}" "$2" 2>/dev/null || true)
  if [ "$have" = "$key" ]; then
    return 0
  fi
  echo "base images: podman import $1 as $2" >&2
  "$podman" import --quiet --change "LABEL $label=$key" --change 'CMD ["bash"]' \
    --message "debian $suite minbase by mmdebstrap (tools/image/base-images.sh)" \
    "$1" "$2" >/dev/null
}
import "$dir/rootfs.tar" "localhost/debian:$suite"
import "$dir/slim.tar" "localhost/debian:$suite-slim"
echo "localhost/debian:$suite localhost/debian:$suite-slim"
