#!/usr/bin/env bash
# Installs the Python client libraries of the client matrix from PyPI, one
# venv per driver (tests/clients/<name>/requirements.txt pins every package,
# transitive ones included; --no-deps keeps pip from adding any other), made
# with Debian's /usr/bin/python3 (python3-venv, which tools/setup.sh
# installs). Venvs never see Debian's site-packages, so Debian's
# python3-kafka 2.0.2 and python3-confluent-kafka 1.7.0 (other peers of the
# suite) cannot shadow the versions pinned here.
#
# Cache: ${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}/
#   pyclients-<hash of requirements and Python version>/<name>/   the venvs
#   clients/python/<name> -> the current one (what tests/clients/clients.json names)
# A finished venv has a .complete marker; anything without it is rebuilt.
# Idempotent: a second run only checks the markers. Prints the
# clients/python directory on stdout; everything else goes to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}
py=/usr/bin/python3
names=(confluent-kafka-python aiokafka kafka-python)

fail() { echo "python clients: $*" >&2; exit 1; }
[ -x "$py" ] || fail "$py not found (apt-get install python3)"
"$py" -c 'import ensurepip, venv' 2>/dev/null || fail "$py has no venv/ensurepip (apt-get install python3-venv)"

key=$( { "$py" --version
         for n in "${names[@]}"; do echo "$n"; cat "$repo/tests/clients/$n/requirements.txt"; done
       } | sha256sum | cut -c1-16)
root=$cache/pyclients-$key
links=$cache/clients/python
mkdir -p "$root" "$links"
for n in "${names[@]}"; do
  venv=$root/$n
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv"
    echo "python clients: $n into $venv" >&2
    started=$SECONDS
    "$py" -m venv "$venv" >&2
    nice "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input --no-deps \
      --timeout 60 -r "$repo/tests/clients/$n/requirements.txt" >&2 || fail "pip install for $n failed"
    # A pin list that misses a dependency installs fine with --no-deps; this catches it.
    "$venv/bin/pip" check --disable-pip-version-check >&2 || fail "$n: pinned packages do not satisfy each other"
    echo "python clients: $n installed in $((SECONDS - started)) s" >&2
    touch "$venv/.complete"
  fi
  ln -sfn "$venv" "$links/$n"
done
# Venvs of older pins nobody has linked for a week.
find "$cache" -maxdepth 1 -name 'pyclients-*' -type d ! -path "$root" -mtime +7 -exec rm -rf {} + 2>/dev/null || true
touch "$root"
echo "$links"
