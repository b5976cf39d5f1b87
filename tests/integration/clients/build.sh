#!/usr/bin/env bash
# Builds the client peers of tests/integration/test_clients_*.py and the
# kafka-go dial peer of tests/faults/test_upstream_dialer.py into a cache
# outside the clone (tools/setup.sh runs this, so tests only run the peers)
# and prints where each one is:
#   sarama=PATH  kafkago=PATH  kafkagodial=PATH  kafkajs=PATH (peer.js)  node=PATH
# one per line on stdout; everything else goes to stderr.
#
# sarama and kafka-go are Debian's packages, built with Debian's Go in GOPATH
# mode (GO111MODULE=off, GOPATH=/usr/share/gocode): no module proxy is used.
# KafkaJS comes from the npm registry with `npm install`, pinned below.
# Cache: ${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}/client-peers/
#   go-<hash of sources, Go version, package versions>/{sarama,kafkago,kafkagodial}
#   gocache/  (Go's build cache)
#   kafkajs-<version>/node_modules/kafkajs  (a .complete marker when done)
# Idempotent: a second run only checks the cache. Exits non-zero with a
# reason when a tool or package is missing; it never installs system packages
# (tools/setup.sh does).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kafkajs_version=2.2.4
cache=${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}/client-peers
gocode=/usr/share/gocode
mkdir -p "$cache"

fail() { echo "client peers: $*" >&2; exit 1; }

command -v go >/dev/null || fail "go not found (apt-get install golang-go)"
for pkg in github.com/Shopify/sarama github.com/segmentio/kafka-go; do
  [ -d "$gocode/src/$pkg" ] || fail "$gocode/src/$pkg missing (apt-get install golang-github-shopify-sarama-dev golang-github-segmentio-kafka-go-dev)"
done
pkgver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo unknown; }
key=$( { go version
         pkgver golang-github-shopify-sarama-dev
         pkgver golang-github-segmentio-kafka-go-dev
         cd "$here" && find peerledger sarama kafkago kafkagodial -name '*.go' | sort | xargs sha256sum
       } | sha256sum | cut -c1-16)
out=$cache/go-$key
if [ ! -f "$out/.complete" ]; then
  rm -rf "$out"
  mkdir -p "$out/gopath/src"
  # A GOPATH of our own in front of Debian's, whose `epochgate` package
  # folder is this directory, so the peers import epochgate/peerledger.
  ln -s "$here" "$out/gopath/src/epochgate"
  for peer in sarama kafkago kafkagodial; do
    echo "client peers: building $peer with $(go version | cut -d' ' -f3) (GOPATH mode)" >&2
    GO111MODULE=off GOPATH="$out/gopath:$gocode" GOCACHE="$cache/gocache" GOFLAGS= \
      GOPROXY=off nice go build -o "$out/$peer" "epochgate/$peer" >&2 \
      || fail "go build of $peer failed"
  done
  rm -rf "$out/gopath"
  touch "$out/.complete"
fi
touch "$out"
# Builds of older sources nobody has used for a week.
find "$cache" -maxdepth 1 -name 'go-*' -type d ! -path "$out" -mtime +7 -exec rm -rf {} + 2>/dev/null || true

command -v node >/dev/null || fail "node not found (apt-get install nodejs npm)"
js=$cache/kafkajs-$kafkajs_version
if [ ! -f "$js/.complete" ]; then
  command -v npm >/dev/null || fail "npm not found (apt-get install npm)"
  rm -rf "$js"
  mkdir -p "$js"
  echo "client peers: npm install kafkajs@$kafkajs_version" >&2
  (cd "$js" && npm install --no-audit --no-fund --no-save --silent "kafkajs@$kafkajs_version" >&2) \
    || fail "npm install kafkajs@$kafkajs_version failed"
  got=$(node -p "require('$js/node_modules/kafkajs/package.json').version")
  [ "$got" = "$kafkajs_version" ] || fail "npm installed kafkajs $got, wanted $kafkajs_version"
  touch "$js/.complete"
fi

echo "sarama=$out/sarama"
echo "kafkago=$out/kafkago"
echo "kafkagodial=$out/kafkagodial"
echo "kafkajs_modules=$js/node_modules"
echo "kafkajs_version=$kafkajs_version"
echo "kafkajs=$here/kafkajs/peer.js"
echo "node=$(command -v node)"
