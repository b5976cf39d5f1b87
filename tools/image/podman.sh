#!/usr/bin/env bash
# tools/image/podman.sh ARGS...: runs `podman ARGS...` with this project's
# containers.conf (runc, no default ulimits: see that file). Every script and
# test that drives podman goes through here, so they all see the same engine.
#   tools/image/podman.sh --check   exit 0 if podman can run a container here,
#                                   else print why and exit 77 (1 when CI=true:
#                                   CI installs podman, so it must not skip)
# Must never: change the host's podman configuration or storage settings.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF=${EPOCHGATE_CONTAINERS_CONF:-$here/containers.conf}

if [ "${1:-}" != --check ]; then
  exec podman "$@"
fi

cannot() {
  echo "podman cannot run here: $*" >&2
  if [ "${CI:-}" = true ]; then
    echo "(CI=true: tools/setup.sh installs podman and runc, so this is a failure, not a skip)" >&2
    exit 1
  fi
  exit 77
}
command -v podman >/dev/null || cannot "podman is not installed (tools/setup.sh installs podman and runc)"
command -v runc >/dev/null || cannot "runc is not installed (tools/setup.sh installs it)"
[ "$(id -u)" = 0 ] || cannot "the tests use rootful podman and run as uid $(id -u)"
out=$(podman info --format '{{.Host.OCIRuntime.Name}} {{.Store.GraphDriverName}}' 2>&1) \
  || cannot "podman info failed: $out"
echo "podman $(podman version --format '{{.Client.Version}}'): runtime and storage $out" >&2
