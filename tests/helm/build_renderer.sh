#!/usr/bin/env bash
# tests/helm/build_renderer.sh OUT: builds tests/helm/render (the offline Helm
# renderer) into OUT, offline, from Debian's Go packages in GOPATH mode.
# Must never: download modules or install packages; it names what is missing.
set -euo pipefail
out=$1
src=$(cd "$(dirname "$0")/render" && pwd)
gopath=/usr/share/gocode
missing=()
command -v go >/dev/null || missing+=(golang-go)
[ -d $gopath/src/github.com/Masterminds/sprig ] || missing+=(golang-github-masterminds-sprig-dev)
[ -d $gopath/src/gopkg.in/yaml.v2 ] || missing+=(golang-gopkg-yaml.v2-dev)
[ -d $gopath/src/github.com/xeipuuv/gojsonschema ] || missing+=(golang-github-xeipuuv-gojsonschema-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "helm renderer: missing Debian packages: ${missing[*]} (tools/setup.sh installs them)" >&2
  exit 1
fi
cd "$src"
GO111MODULE=off GOPATH=$gopath GOFLAGS= GOPROXY=off GOTOOLCHAIN=local \
  GOCACHE="$(dirname "$out")/go-cache" go build -o "$out" .
echo "built $out with $(go version)"
