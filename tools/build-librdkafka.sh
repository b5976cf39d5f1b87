#!/usr/bin/env bash
# Builds librdkafka 2.15.1 (client and mock cluster) once into a cache outside
# the clone. The source is the copy shipped inside the npm package
# @confluentinc/kafka-javascript@1.10.1 (deps/librdkafka), fetched with
# `npm pack`. Prints the install prefix on stdout; everything else on stderr.
#
# Cache: ${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}/librdkafka-2.15.1
# A finished build leaves a .complete marker; anything without it is rebuilt.
# The build has SSL against Debian's OpenSSL (libssl-dev): the TLS tests'
# librdkafka 2.15.1 peer speaks security.protocol=ssl. A cached build
# without it (made before libssl-dev was installed) is rebuilt.
set -euo pipefail

version=2.15.1
npm_pkg=@confluentinc/kafka-javascript@1.10.1
cache=${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}
prefix=$cache/librdkafka-$version

has_ssl() { grep -q 'libssl' "$prefix/lib/pkgconfig/rdkafka.pc" 2>/dev/null; }
if [ -f "$prefix/.complete" ] && has_ssl; then
  echo "$prefix"
  exit 0
fi
rm -f "$prefix/.complete"

work=$(mktemp -d "${TMPDIR:-/tmp}/epochgate-rdk.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache"
{
  echo "librdkafka $version: fetching $npm_pkg with npm pack"
  (cd "$work" && npm pack --silent "$npm_pkg" >/dev/null)
  tar -xzf "$work"/confluentinc-kafka-javascript-*.tgz -C "$work"
  src=$work/package/deps/librdkafka
  grep -q 'RD_KAFKA_VERSION  *0x020f01ff' "$src/src/rdkafka.h" || {
    echo "unexpected librdkafka version in $npm_pkg" >&2; exit 1; }
  echo "librdkafka $version: building into $prefix (about 90 s on 2 cores)"
  cd "$src"
  # No SASL/GSSAPI or libcurl: the tests run on loopback only. SSL is
  # required (configure fails without libssl-dev instead of leaving it out).
  ./configure --prefix="$prefix" --disable-gssapi --disable-curl \
    --disable-syslog --enable-ssl >"$work/configure.log" 2>&1 || {
    tail -40 "$work/configure.log"; exit 1; }
  make -j"$(nproc)" libs >"$work/make.log" 2>&1 || { tail -60 "$work/make.log"; exit 1; }
  make install-subdirs >"$work/install.log" 2>&1 || { tail -40 "$work/install.log"; exit 1; }
  # The mock cluster API header is not installed by default; tools need it.
  install -m 0644 src/rdkafka_mock.h "$prefix/include/librdkafka/"
  has_ssl || { echo "librdkafka $version: built without SSL (libssl-dev missing?)" >&2; exit 1; }
  touch "$prefix/.complete"
} >&2
echo "$prefix"
