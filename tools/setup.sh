#!/usr/bin/env bash
# Installs what epochgate needs on a fresh Debian 12 machine (as root, or with
# sudo), builds librdkafka 2.15.1 into its cache, then configures and builds.
# Idempotent: a second run only rebuilds what changed.
#   tools/setup.sh [build-dir] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true

packages=(
  build-essential cmake pkg-config git python3
  libuv1-dev libspdlog-dev libfmt-dev libyaml-cpp-dev prometheus-cpp-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev node-llhttp
  kcat python3-kafka python3-confluent-kafka python3-prometheus-client python3-yaml
  curl procps
  # tests/faults: the default-admin-port test runs epochgate in a private
  # network namespace (unshare from util-linux, ip to bring its loopback up).
  util-linux iproute2
  # Helm chart rendering in the tests (Helm itself is not packaged): Go's
  # text/template with sprig, and Helm's JSON-schema validator.
  golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev
  golang-github-xeipuuv-gojsonschema-dev
  # tools/ci-extra.sh: libFuzzer targets and the sanitizer runtimes.
  clang libclang-rt-14-dev
  # tests/integration/clients: sarama and kafka-go, built with golang-go in
  # GOPATH mode; KafkaJS runs on Node.js (npm installs it, below).
  golang-github-shopify-sarama-dev golang-github-segmentio-kafka-go-dev
)
# npm fetches librdkafka's source; a machine whose Node.js already ships npm
# (NodeSource's nodejs conflicts with Debian's npm package) keeps its own.
command -v npm >/dev/null 2>&1 || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd=sudo
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

rdk=$(tools/build-librdkafka.sh)
cmake -S . -B "$build" -DEPOCHGATE_LIBRDKAFKA_PREFIX="$rdk" "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
# The sarama and kafka-go peers and KafkaJS (npm, pinned), into the cache.
tests/integration/clients/build.sh >/dev/null
