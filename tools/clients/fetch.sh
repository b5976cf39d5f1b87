#!/usr/bin/env bash
# Fetches and builds the client matrix's drivers (tests/clients/) into a
# cache outside the clone:
#   Go:   franz-go, sarama, kafka-go (tests/clients/go, versions pinned in
#         go.mod/go.sum) -> <cache>/clients/go/bin/, with GOMODCACHE and
#         GOCACHE under <cache>/go so nothing lands in the clone or ~/go;
#   Java: the kafka-clients 4.4.0 driver compiled with javac against the jars
#         tools/kafka/fetch.sh put in the cache -> <cache>/clients/java/;
#   and the Python and JavaScript drivers through their own scripts beside
#   this one (fetch-python.sh, fetch-node.sh) when those exist.
# Idempotent: each part leaves a marker named by a hash of its sources, so a
# second run only compares hashes.
#   tools/clients/fetch.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}
out=$cache/clients
mkdir -p "$out"

sources_hash() { (cd "$repo" && find "$@" -type f | sort | xargs sha256sum | sha256sum | cut -c1-16); }

# --- Go
# go.mod asks for Go $want; Debian's golang-go is older, so an older go
# gets the toolchain go itself would fetch (a module on the Go module
# proxy, golang.org/toolchain), unpacked into the cache once.
want=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$repo/tests/clients/go/go.mod")
new_enough() {
  local v
  v=$("$1" env GOVERSION 2>/dev/null | sed 's/^go//') || return 1
  [ "$(printf '%s\n%s\n' "$want" "$v" | sort -V | head -1)" = "$want" ]
}
go=
for candidate in "$(command -v go || true)" /usr/local/go/bin/go "$cache/go/toolchain-$want/go/bin/go"; do
  if [ -x "$candidate" ] && new_enough "$candidate"; then go=$candidate; break; fi
done
if [ -z "$go" ]; then
  arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
  url=https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go$want.linux-$arch.zip
  echo "clients: fetching Go $want from $url" >&2
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/epochgate-go.XXXXXX")
  curl -fsSL -o "$tmp/go.zip" "$url"
  rm -rf "$cache/go/toolchain-$want"
  mkdir -p "$cache/go/toolchain-$want"
  # The module zip holds golang.org/toolchain@.../ as its top directory.
  (cd "$tmp" && python3 -c 'import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' go.zip x)
  mv "$tmp"/x/golang.org/toolchain@*/ "$cache/go/toolchain-$want/go"
  chmod +x "$cache/go/toolchain-$want/go/bin/"* "$cache/go/toolchain-$want/go/pkg/tool/"*/*
  rm -rf "$tmp"
  go=$cache/go/toolchain-$want/go/bin/go
fi
hash=$(sources_hash tests/clients/go)
if [ "$(cat "$out/go/.complete" 2>/dev/null)" != "$hash" ]; then
  echo "clients: building the Go drivers" >&2
  mkdir -p "$out/go/bin"
  export GOMODCACHE=$cache/go/mod GOCACHE=$cache/go/build GOFLAGS=-modcacherw GOTOOLCHAIN=local GOPATH=$cache/go
  for d in franz-go sarama kafka-go; do
    (cd "$repo/tests/clients/go" && nice "$go" build -trimpath -o "$out/go/bin/$d.tmp.$$" "./$d")
    mv "$out/go/bin/$d.tmp.$$" "$out/go/bin/$d"
  done
  echo "$hash" >"$out/go/.complete"
fi

# --- Java
if [ -d "$repo/tests/clients/java" ]; then
  hash=$(sources_hash tests/clients/java)
  if [ "$(cat "$out/java/.complete" 2>/dev/null)" != "$hash" ]; then
    kafka=$("$repo/tools/kafka/fetch.sh" 4.4.0)
    echo "clients: compiling the Java driver against $kafka/lib" >&2
    rm -rf "$out/java"
    mkdir -p "$out/java/classes"
    javac -nowarn -d "$out/java/classes" -cp "$kafka/lib/*" "$repo"/tests/clients/java/*.java
    # The driver's launcher: the cached jars, the classes, logs on stderr.
    cat >"$out/java/driver" <<SH
#!/bin/sh
exec java -Xmx192m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto \\
  -Dlog4j2.configurationFile=$kafka/conf/tools-log4j2.properties \\
  -cp "$kafka/lib/*:$out/java/classes" MatrixDriver "\$@"
SH
    chmod +x "$out/java/driver"
    echo "$hash" >"$out/java/.complete"
  fi
fi

# --- the Python and JavaScript drivers (their own scripts)
for part in fetch-python.sh fetch-node.sh; do
  if [ -x "$here/$part" ]; then
    "$here/$part"
  fi
done
echo "$out"
