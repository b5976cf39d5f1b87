// tests/helm/validate_manifests.mjs MODULES_DIR < manifests.json
// Validates rendered Kubernetes manifests against the Kubernetes OpenAPI
// schemas, offline: `kubectl apply --dry-run=client` needs an API server for
// discovery, so the schemas come from the npm packages kubernetes-models and
// @kubernetes-models/prometheus-operator (tools/fetch-k8s-tools.sh puts them
// in MODULES_DIR). Reads a JSON array of objects on stdin; prints one line per
// object ("ok KIND/NAME" or "invalid KIND/NAME: reasons") and exits 1 if any
// object is invalid or of a kind no package knows.
// Owns: the apiVersion/kind -> schema lookup. Must never: contact a cluster.
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
if (!modules) {
  console.error("usage: validate_manifests.mjs MODULES_DIR < manifests.json");
  process.exit(2);
}

// apiVersion -> the module file of its kind: core "v1" lives at v1/KIND.js,
// "group/version" at group/version/KIND.js; CRDs of the Prometheus Operator
// come from their own package.
function modelFile(apiVersion, kind) {
  const pkg = apiVersion.startsWith("monitoring.coreos.com/")
    ? "@kubernetes-models/prometheus-operator"
    : "kubernetes-models";
  return join(modules, pkg, apiVersion, `${kind}.js`);
}

const objects = JSON.parse(readFileSync(0, "utf8"));
let bad = 0;
for (const obj of objects) {
  const what = `${obj.kind}/${obj.metadata?.name}`;
  const file = modelFile(String(obj.apiVersion), String(obj.kind));
  if (!existsSync(file)) {
    console.log(`invalid ${what}: no schema for apiVersion ${obj.apiVersion} kind ${obj.kind}`);
    bad++;
    continue;
  }
  const mod = await import(pathToFileURL(file).href);
  const Model = mod[obj.kind] ?? mod.default;
  try {
    new Model(obj).validate();
    console.log(`ok ${what}`);
  } catch (e) {
    console.log(`invalid ${what}: ${e.message}`);
    bad++;
  }
}
process.exit(bad ? 1 : 0);
