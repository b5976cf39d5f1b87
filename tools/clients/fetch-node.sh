#!/usr/bin/env bash
# Installs the JavaScript client libraries of the client matrix from the npm
# registry with `npm ci`, from the package.json and package-lock.json in
# tests/clients/<name>/ (every version pinned, transitive ones included):
#   kafkajs                     KafkaJS 2.2.4 with its snappy, lz4 and zstd
#                               codec packages (lz4 and cppzst are native
#                               addons, built by node-gyp against Node.js's
#                               own headers; cppzst needs C++17 for them);
#   confluent-kafka-javascript  @confluentinc/kafka-javascript 1.10.1. Its
#                               prebuilt addon is downloaded from GitHub,
#                               which the tests must not need, so the addon
#                               is built from source and linked against the
#                               librdkafka 2.15.1 tools/build-librdkafka.sh
#                               caches (the same release the package
#                               bundles), instead of compiling that again.
# Cache: ${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}/
#   nodeclients-<name>-<hash of the lock, Node.js version, librdkafka>/node_modules
#   clients/node/<name> -> the current one (where the drivers look)
# A finished install has a .complete marker; anything without it is redone.
# Idempotent. Prints the clients/node directory on stdout, the rest on stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}
links=$cache/clients/node
mkdir -p "$links"

fail() { echo "node clients: $*" >&2; exit 1; }
command -v node >/dev/null || fail "node not found (apt-get install nodejs npm)"
command -v npm >/dev/null || fail "npm not found (apt-get install npm)"
# node-gyp must build against the installed Node.js's headers: fetching
# them from nodejs.org is not possible here.
nodedir=$(dirname "$(dirname "$(command -v node)")")
[ -f "$nodedir/include/node/node.h" ] || fail "no Node.js headers in $nodedir/include/node (Debian: apt-get install libnode-dev)"
rdk=$("$repo/tools/build-librdkafka.sh")

install() {  # install NAME [env assignments for npm ci...]
  local name=$1; shift
  local src=$repo/tests/clients/$name
  local key dir started
  key=$( { node --version; echo "$rdk"; cat "$src/package.json" "$src/package-lock.json"; } | sha256sum | cut -c1-16)
  dir=$cache/nodeclients-$name-$key
  if [ ! -f "$dir/.complete" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$src/package.json" "$src/package-lock.json" "$dir/"
    echo "node clients: npm ci for $name in $dir" >&2
    started=$SECONDS
    (cd "$dir" && env "$@" npm_config_nodedir="$nodedir" nice npm ci --no-audit --no-fund \
      --foreground-scripts >"$dir/npm-ci.log" 2>&1) || { tail -40 "$dir/npm-ci.log" >&2; fail "npm ci for $name failed"; }
    echo "node clients: $name installed in $((SECONDS - started)) s" >&2
    touch "$dir/.complete"
  fi
  ln -sfn "$dir" "$links/$name"
  touch "$dir"
}

install kafkajs CXXFLAGS=-std=gnu++17
install confluent-kafka-javascript npm_config_build_from_source=true BUILD_LIBRDKAFKA=0 \
  CKJS_LINKING=dynamic CPPFLAGS="-I$rdk/include/librdkafka" LDFLAGS="-L$rdk/lib -Wl,-rpath,$rdk/lib"
node -e 'require(process.argv[1])' "$links/confluent-kafka-javascript/node_modules/@confluentinc/kafka-javascript" \
  || fail "the built @confluentinc/kafka-javascript addon does not load"
# Installs of older locks nobody has linked for a week.
find "$cache" -maxdepth 1 -name 'nodeclients-*' -type d -mtime +7 -exec rm -rf {} + 2>/dev/null || true
echo "$links"
