#!/usr/bin/python3
"""tests/helm/chart_render_test.py: the Helm chart, rendered by Helm 4 itself,
in both modes and with several values files, gives manifests a cluster would
accept and that wire up what epochgate needs: the listeners its config opens
are the ports the pod and Service expose, probes hit /healthz and /readyz on
the admin port, the container runs as the image's non-root user on a
read-only root, the config checksum matches the ConfigMap, and bad values are
refused (Helm enforces values.schema.json; the templates refuse the rest).

Every rendering is `helm template` (or `helm install --dry-run=client` where
the install notes matter), and every manifest is validated against the
Kubernetes OpenAPI schemas by tests/helm/validate_manifests.mjs: `kubectl
apply --dry-run=client` cannot run without an API server (it needs discovery
and the live object). One case per run:

  chart_render_test.py --repo DIR [--k8s-tools DIR] [--epochgate BIN] CASE

--k8s-tools is what tools/fetch-k8s-tools.sh prints (helm, kubectl,
node_modules); by default the test runs that script (a cache lookup).
With --epochgate (the built binary), every rendered config must also pass
`epochgate --check-config`.
Owns: the chart's observable contract. Must never: install anything or
contact a cluster.
Needs python3-yaml (Debian) and node, runs as /usr/bin/python3.
"""

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
PORT_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
DNS_LABEL = re.compile(r"^[a-z]([a-z0-9-]*[a-z0-9])?$")  # Service names (RFC 1035 label)
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


class Ctx:
    def __init__(self, args):
        self.tools = args.k8s_tools
        self.helm = os.path.join(args.k8s_tools, "helm")
        self.repo = args.repo
        self.epochgate = args.epochgate
        self.chart = os.path.join(args.repo, "helm", "epochgate")
        self.client_chart = os.path.join(args.repo, "tests", "helm", "client-chart")
        self.values_dir = os.path.join(args.repo, "tests", "helm", "values")
        self.checked = 0
        self.validated = 0
        # Helm keeps its caches and repository list under $HOME: a private one.
        self.home = tempfile.mkdtemp(prefix="epochgate-helm-")
        self.env = dict(os.environ, HOME=self.home, HELM_CACHE_HOME=os.path.join(self.home, "cache"),
                        HELM_CONFIG_HOME=os.path.join(self.home, "config"),
                        HELM_DATA_HOME=os.path.join(self.home, "data"), KUBECONFIG="/dev/null")

    def run(self, argv, cwd=None):
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                              env=self.env, cwd=cwd or self.repo)

    def render(self, chart, values=(), release="prod", namespace="kafka", kube="v1.30.0", notes=False):
        """`helm template`, or with notes=True `helm install --dry-run=client`
        (its output carries NOTES.txt; Helm 4's install takes no --kube-version)."""
        if notes:
            cmd = [self.helm, "install", release, chart, "-n", namespace, "--dry-run=client"]
        else:
            cmd = [self.helm, "template", release, chart, "-n", namespace, "--kube-version", kube]
        # The chart needs an image repository; each case's files come after.
        # (The client chart names it in its own values.)
        if chart == self.chart or chart.endswith(".tgz"):
            cmd += ["-f", self.value_file("image.yaml")]
        for v in values:
            cmd += ["-f", v]
        return self.run(cmd)

    def manifests(self, chart, values=(), **kw):
        r = self.render(chart, values, **kw)
        check(r.returncode == 0, f"helm template failed: {r.stderr.strip()}")
        return self.parse_manifests(r.stdout)

    def parse_manifests(self, text):
        docs = []
        for doc in yaml.safe_load_all(text):
            if doc is None:
                continue
            check(isinstance(doc, dict), f"manifest is not a mapping: {doc!r}")
            for key in ("apiVersion", "kind", "metadata"):
                check(key in doc, f"manifest without {key}: {doc}")
            check(doc["metadata"].get("name"), f"{doc['kind']} without a name")
            docs.append(doc)
            name = doc["metadata"]["name"]
            rule = DNS_LABEL if doc["kind"] == "Service" else DNS_SUBDOMAIN
            check(len(name) <= 63 and rule.match(name), f"{doc['kind']} name {name!r} is not a valid Kubernetes name")
            for k, v in (doc["metadata"].get("labels") or {}).items():
                check(isinstance(v, str) and len(v) <= 63, f"label {k}={v!r} on {name} is not a string of <= 63 chars")
        names = [(d["kind"], d["metadata"]["name"]) for d in docs]
        check(len(names) == len(set(names)), f"duplicate objects: {names}")
        self.validate(docs)
        return docs

    def validate(self, docs):
        """Every object against the Kubernetes OpenAPI schema of its kind."""
        r = subprocess.run(["node", os.path.join(HERE, "validate_manifests.mjs"),
                            os.path.join(self.tools, "node_modules")],
                           input=json.dumps(docs), capture_output=True, text=True, timeout=60,
                           check=False)
        bad = [line for line in r.stdout.splitlines() if not line.startswith("ok ")]
        check(r.returncode == 0 and not bad and r.stdout.count("ok ") == len(docs),
              f"manifests fail the Kubernetes schemas: {bad or r.stderr.strip()}")
        self.validated += len(docs)

    def value_file(self, name):
        return os.path.join(self.values_dir, name)


def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def one(docs, kind, component=None):
    found = [d for d in by_kind(docs, kind)
             if component is None
             or d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == component]
    check(len(found) == 1, f"expected one {kind} ({component}), found {len(found)}")
    return found[0]


def host_port(s):
    host, _, port = s.rpartition(":")
    return host.strip("[]"), int(port)


def chart_values(ctx, *files):
    """The chart's values.yaml with override files on top (maps merged)."""
    with open(os.path.join(ctx.chart, "values.yaml"), encoding="utf-8") as f:
        vals = yaml.safe_load(f)

    def merge(dst, src):
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                merge(dst[k], v)
            else:
                dst[k] = v
    for path in files:
        with open(path, encoding="utf-8") as f:
            merge(vals, yaml.safe_load(f) or {})
    return vals


def config_of(docs, configmap_name):
    cms = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["name"] == configmap_name]
    check(len(cms) == 1, f"no ConfigMap {configmap_name} among {[d['metadata']['name'] for d in by_kind(docs, 'ConfigMap')]}")
    text = cms[0]["data"]["epochgate.yaml"]
    cfg = yaml.safe_load(text)
    check(isinstance(cfg, dict), "epochgate.yaml in the ConfigMap is not a mapping")
    return text, cfg


def check_config_with_binary(ctx, text):
    if not ctx.epochgate:
        return
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        r = subprocess.run([ctx.epochgate, "--check-config", path, "--no-files"], capture_output=True,
                           text=True, timeout=30, check=False)
        check(r.returncode == 0, f"epochgate --check-config refused the rendered config:\n"
                                 f"{r.stdout}{r.stderr}\n--- config ---\n{text}")
        ctx.checked += 1
    finally:
        os.unlink(path)


def expected_broker_ports(vals):
    """node id -> port, by the product's rule: brokerPorts.map[id], else base + id."""
    bp = vals["brokerPorts"]
    return {int(i): int(bp.get("map", {}).get(str(i), bp["base"] + int(i)))
            for i in vals["brokers"]["nodeIds"]}


def image_user(ctx):
    with open(os.path.join(ctx.repo, "Dockerfile"), encoding="utf-8") as f:
        users = re.findall(r"^USER\s+(\d+)", f.read(), re.M)
    check(users, "Dockerfile has no numeric USER")
    return int(users[-1])


def check_security(ctx, pod_spec, container, pod_level=True):
    uid = image_user(ctx)
    if pod_level:
        psc = pod_spec.get("securityContext", {})
        check(psc.get("runAsNonRoot") is True, "pod securityContext.runAsNonRoot is not true")
        check(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", "pod seccomp is not RuntimeDefault")
    sc = container.get("securityContext", {})
    check(sc.get("runAsNonRoot") is True, "container runAsNonRoot is not true")
    check(sc.get("runAsUser") == uid, f"container runAsUser {sc.get('runAsUser')} is not the image's USER {uid}")
    check(sc.get("readOnlyRootFilesystem") is True, "root filesystem is not read-only")
    check(sc.get("allowPrivilegeEscalation") is False, "privilege escalation allowed")
    check(sc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities not dropped: ALL")
    check(sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", "container seccomp is not RuntimeDefault")


def check_probes(container, admin_port):
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"),
                        ("startupProbe", "/healthz")):
        get = container.get(probe, {}).get("httpGet")
        check(get is not None, f"{probe} is not an httpGet")
        check(get["path"] == path, f"{probe} path {get['path']} is not {path}")
        port = ports.get(get["port"], get["port"])
        check(port == admin_port, f"{probe} port {get['port']} is not the admin port {admin_port}")


def check_config_mount(pod_spec, container, configmap_name):
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
    check("/etc/epochgate" in mounts, "config not mounted at /etc/epochgate")
    vols = {v["name"]: v for v in pod_spec.get("volumes", [])}
    vol = vols.get(mounts["/etc/epochgate"])
    check(vol is not None, f"volume {mounts['/etc/epochgate']} missing from the pod")
    check(vol.get("configMap", {}).get("name") == configmap_name,
          f"volume points at {vol.get('configMap')} instead of ConfigMap {configmap_name}")
    args = container.get("args", [])
    check("--config" in args and args[args.index("--config") + 1] == "/etc/epochgate/epochgate.yaml",
          f"container args {args} do not load /etc/epochgate/epochgate.yaml")


def check_checksum(annotations, text):
    want = hashlib.sha256(text.encode()).hexdigest()
    got = (annotations or {}).get("checksum/epochgate-config")
    check(got == want, f"checksum annotation {got} is not sha256 of the ConfigMap's config {want}")


def labels_select(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def check_gateway(ctx, docs, vals, namespace="kafka"):
    """Everything a gateway install needs, checked against the values used."""
    kinds = sorted(d["kind"] for d in docs)
    for kind in ("ConfigMap", "Deployment", "Service", "PodDisruptionBudget"):
        check(kind in kinds, f"no {kind} rendered (got {kinds})")
    dep = one(docs, "Deployment", "gateway")
    svc = one(docs, "Service", "gateway")
    pod = dep["spec"]["template"]
    spec = pod["spec"]
    check(labels_select(dep["spec"]["selector"]["matchLabels"], pod["metadata"]["labels"]),
          "Deployment selector does not match its pod labels")
    check(labels_select(svc["spec"]["selector"], pod["metadata"]["labels"]),
          "Service selector does not match the gateway pods")
    pdb = one(docs, "PodDisruptionBudget")
    check(labels_select(pdb["spec"]["selector"]["matchLabels"], pod["metadata"]["labels"]),
          "PodDisruptionBudget selector does not match the gateway pods")
    containers = spec["containers"]
    check([c["name"] for c in containers] == ["epochgate"], "gateway pod should run only epochgate")
    c = containers[0]
    cm_name = spec["volumes"][0]["configMap"]["name"]
    text, cfg = config_of(docs, cm_name)
    check_config_mount(spec, c, cm_name)
    check_config_with_binary(ctx, text)

    # Listeners in the config = ports on the pod = ports on the Service.
    brokers = expected_broker_ports(vals)
    bhost, bport = host_port(cfg["listen"])
    ahost, aport = host_port(cfg["admin"]["listen"])
    check(bhost == "0.0.0.0" and ahost == "0.0.0.0", f"gateway listeners bind {bhost}/{ahost}, not 0.0.0.0")
    check(bport == vals["ports"]["bootstrap"] and aport == vals["ports"]["admin"], "listen ports differ from values")
    # The admin port is on the pod address for probes and scraping: /debug stays in the pod unless asked.
    check(cfg["admin"].get("expose_debug") is bool(vals.get("admin", {}).get("exposeDebug", False)),
          "admin.expose_debug differs from values (admin.exposeDebug)")
    bp = cfg["broker_ports"]
    check(bp["base"] == vals["brokerPorts"]["base"], "broker_ports.base differs from values")
    for node, port in brokers.items():
        cfg_port = bp.get("map", {}).get(node, bp["base"] + node)
        check(cfg_port == port, f"config serves node {node} on {cfg_port}, chart exposes {port}")
    unmapped = [n for n in brokers if n not in bp.get("map", {})]
    check(bp["max_node_id"] == max(unmapped, default=0),
          f"broker_ports.max_node_id {bp['max_node_id']} is not the highest listed id using base + id")
    cports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(len(cports) == len(c["ports"]), "duplicate container port names")
    for name in cports:
        check(len(name) <= 15 and PORT_NAME.match(name), f"invalid port name {name!r}")
    want_pod = {bport, aport} | set(brokers.values())
    check(set(cports.values()) == want_pod, f"pod ports {sorted(cports.values())} != {sorted(want_pod)}")
    sports = {p["port"]: p for p in svc["spec"]["ports"]}
    want_svc = {bport} | set(brokers.values())
    check(set(sports) == want_svc, f"Service ports {sorted(sports)} != bootstrap + brokers {sorted(want_svc)}")
    for port, p in sports.items():
        check(cports.get(p["targetPort"]) == port,
              f"Service port {port} targets {p['targetPort']}, which is not container port {port}")
    adm = one(docs, "Service", "admin") if vals["adminService"]["enabled"] else None
    if adm:
        check(labels_select(adm["spec"]["selector"], pod["metadata"]["labels"]), "admin Service selects no gateway pod")
        check([cports.get(p["targetPort"]) for p in adm["spec"]["ports"]] == [aport], "admin Service is not the admin port")

    # Clients reach brokers at advertise_host:<port>, which must be this Service.
    adv = vals["advertiseHost"] or f"{svc['metadata']['name']}.{namespace}.svc"
    check(cfg["advertise_host"] == adv, f"advertise_host {cfg['advertise_host']} != {adv}")
    check(cfg["bootstrap_servers"] == vals["kafka"]["bootstrapServers"], "bootstrap_servers differ from values")
    for key, value in vals["config"].items():
        if value not in ({}, None):
            check(cfg.get(key) == value, f"config.{key} rendered as {cfg.get(key)!r}, values say {value!r}")

    check_probes(c, aport)
    check_security(ctx, spec, c)
    check_checksum(pod["metadata"].get("annotations"), text)
    grace = spec["terminationGracePeriodSeconds"]
    pre = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", ["", "0"])[-1]
    check(grace > int(pre) + cfg["drain_timeout_ms"] / 1000,
          f"terminationGracePeriodSeconds {grace} does not cover preStop {pre}s + drain {cfg['drain_timeout_ms']} ms")
    check(c.get("resources", {}).get("requests"), "no resource requests")
    return dep, svc, cfg


def case_gateway_defaults(ctx):
    docs = ctx.manifests(ctx.chart)
    vals = chart_values(ctx)
    check_gateway(ctx, docs, vals)
    kinds = sorted(d["kind"] for d in docs)
    check(kinds == ["ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "Service"],
          f"default install renders {kinds}")
    # The install notes tell users the address that the config advertises.
    r = ctx.render(ctx.chart, notes=True)
    check(r.returncode == 0, f"NOTES.txt does not render: {r.stderr.strip()}")
    check("\nNOTES:\n" in r.stdout, f"helm install --dry-run=client printed no NOTES:\n{r.stdout[-400:]}")
    notes = r.stdout.split("\nNOTES:\n", 1)[1]
    _, cfg = config_of(docs, one(docs, "Deployment")["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"])
    check(f"bootstrap.servers={cfg['advertise_host']}:{vals['ports']['bootstrap']}" in notes,
          f"NOTES.txt does not give the bootstrap address:\n{notes}")
    for node, port in expected_broker_ports(vals).items():
        check(f"{node}->{port}" in notes, f"NOTES.txt does not list node {node} on port {port}")
    with open(os.path.join(ctx.repo, "Dockerfile"), encoding="utf-8") as f:
        exposed = {int(p) for line in re.findall(r"^EXPOSE\s+(.*)$", f.read(), re.M) for p in line.split()}
    check({vals["ports"]["bootstrap"], vals["ports"]["admin"]} <= exposed,
          f"chart ports not in the Dockerfile's EXPOSE {sorted(exposed)}")


def case_gateway_sparse_node_ids(ctx):
    f = ctx.value_file("sparse-node-ids.yaml")
    docs = ctx.manifests(ctx.chart, [f])
    vals = chart_values(ctx, f)
    _, svc, cfg = check_gateway(ctx, docs, vals)
    check(expected_broker_ports(vals) == {1001: 9101, 1002: 9102, 40: 19040}, "fixture changed")
    check(cfg["broker_ports"]["map"] == {1001: 9101, 1002: 9102},
          f"broker_ports.map rendered as {cfg['broker_ports'].get('map')} (node ids must be integer keys)")
    check(cfg["limits"]["max_frame_bytes"] == 104857600, "large integers must stay integers")
    check(svc["spec"]["type"] == "LoadBalancer", "service.type not applied")
    check(cfg["advertise_host"] == "kafka-proxy.example.com", "advertiseHost not applied")


def case_gateway_monitoring(ctx):
    f = ctx.value_file("monitoring.yaml")
    docs = ctx.manifests(ctx.chart, [f])
    check_gateway(ctx, docs, chart_values(ctx, f))
    sm = one(docs, "ServiceMonitor")
    check(sm["apiVersion"] == "monitoring.coreos.com/v1", f"ServiceMonitor apiVersion {sm['apiVersion']}")
    check(sm["metadata"]["labels"].get("release") == "kube-prometheus-stack", "serviceMonitor.labels not applied")
    targets = [s for s in by_kind(docs, "Service")
               if labels_select(sm["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])]
    check(len(targets) == 1, f"ServiceMonitor selects {len(targets)} Services, expected the admin one")
    ep = sm["spec"]["endpoints"][0]
    check(ep["path"] == "/metrics" and ep["interval"] == "15s", f"endpoint {ep}")
    check(ep["port"] in [p["name"] for p in targets[0]["spec"]["ports"]], "endpoint port not on the admin Service")

    dash = [d for d in by_kind(docs, "ConfigMap") if d["metadata"]["labels"].get("grafana_dashboard") == "1"]
    check(len(dash) == 1, "no ConfigMap labelled grafana_dashboard: \"1\"")
    check(dash[0]["metadata"]["namespace"] == "monitoring", "dashboard.namespace not applied")
    board = json.loads(dash[0]["data"]["epochgate.json"])
    panels = [p for p in board["panels"] if p["type"] != "row"]
    exprs = [t["expr"] for p in panels for t in p.get("targets", [])]
    check(all(p.get("targets") for p in panels), "a panel without queries")
    used = {re.sub(r"_(bucket|sum|count)$", "", m) for e in exprs for m in re.findall(r"epochgate_[a-z_]+", e)}
    for required in ("epochgate_requests_total", "epochgate_fenced_partitions_total", "epochgate_hints_total",
                     "epochgate_upstream_latency_seconds", "epochgate_proxy_latency_seconds",
                     "epochgate_connections_active", "epochgate_metadata_refreshes_total",
                     # what a first deployment is watched by: readiness, why
                     # connections close, upstream failures, reroutes, TLS
                     # and SASL failures, certificate expiry
                     "epochgate_ready", "epochgate_connections_closed_total",
                     "epochgate_upstream_connect_failures_total", "epochgate_upstream_unanswered_total",
                     "epochgate_reroutes_total", "epochgate_tls_handshakes_total",
                     "epochgate_sasl_authentications_total",
                     "epochgate_tls_certificate_expiry_seconds"):
        check(required in used, f"dashboard has no panel on {required}")
    check(any("histogram_quantile(0.99" in e and "upstream_latency" in e for e in exprs), "no upstream p99 panel")
    check(any("histogram_quantile(0.99" in e and "proxy_latency" in e for e in exprs), "no proxy p99 panel")
    # Every metric the dashboard queries must be a family of metrics/families.def
    # (the one declaration; a family's name is epochgate_ plus its row's id).
    with open(os.path.join(ctx.repo, "metrics", "families.def"), encoding="utf-8") as f:
        declared = {"epochgate_" + m for m in
                    re.findall(r"^EG_(?:COUNTER|GAUGE|HISTOGRAM)\((\w+),", f.read(), re.M)}
    unknown = sorted(m for m in used if m not in declared)
    check(not unknown, f"dashboard queries metrics that metrics/families.def never declares: {unknown}")
    ids = [p["id"] for p in board["panels"]]
    check(len(ids) == len(set(ids)), "duplicate panel ids")


def case_long_release_name(ctx):
    """The longest release name Helm accepts (53 characters) still yields
    valid names of <= 63 chars, all distinct; Helm refuses a longer one."""
    f = ctx.value_file("monitoring.yaml")
    release = "payments-" + "x" * 43 + "z"
    check(len(release) == 53, "fixture changed")
    r = ctx.render(ctx.chart, [f], release=release + "y")
    check(r.returncode != 0 and "longer than 53" in r.stderr, f"Helm took a 54-character release name: {r.stderr}")
    docs = ctx.manifests(ctx.chart, [f], release=release)
    check_gateway(ctx, docs, chart_values(ctx, f))
    check(len(by_kind(docs, "ConfigMap")) == 2 and len(by_kind(docs, "Service")) == 2,
          "config/dashboard ConfigMaps or gateway/admin Services collapsed into one name")


def check_sidecar(ctx, values_files, native, kube):
    docs = ctx.manifests(ctx.client_chart, values_files, release="shop", kube=kube)
    kinds = sorted(d["kind"] for d in docs)
    check(kinds == ["ConfigMap", "Deployment"], f"sidecar install renders {kinds} (no gateway objects expected)")
    vals = chart_values(ctx)
    with open(os.path.join(ctx.client_chart, "values.yaml"), encoding="utf-8") as f:
        client_vals = yaml.safe_load(f)
    overrides = [client_vals] + [yaml.safe_load(open(p, encoding="utf-8")) for p in values_files]
    eg = vals

    def merge(dst, src):
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                merge(dst[k], v)
            else:
                dst[k] = v
    for o in overrides:
        merge(eg, o.get("epochgate", {}))
    dep = one(docs, "Deployment")
    pod = dep["spec"]["template"]
    spec = pod["spec"]
    mains = {c["name"]: c for c in spec["containers"]}
    inits = {c["name"]: c for c in spec.get("initContainers") or []}
    if native:
        check("epochgate" in inits and "epochgate" not in mains, "native sidecar must be an initContainers entry only")
        c = inits["epochgate"]
        check(c.get("restartPolicy") == "Always", "native sidecar without restartPolicy: Always")
    else:
        check("epochgate" in mains and "epochgate" not in inits, "sidecar must be a containers entry only")
        c = mains["epochgate"]
        check("restartPolicy" not in c, "plain sidecar must not set restartPolicy")
    cm_name = spec["volumes"][0]["configMap"]["name"]
    text, cfg = config_of(docs, cm_name)
    check_config_mount(spec, c, cm_name)
    check_config_with_binary(ctx, text)
    bhost, bport = host_port(cfg["listen"])
    check(bhost == "127.0.0.1" and cfg["advertise_host"] == "127.0.0.1"
          and cfg["broker_ports"]["bind_host"] == "127.0.0.1", "sidecar listeners must stay on 127.0.0.1")
    check(bport == eg["ports"]["bootstrap"], "sidecar bootstrap port differs from values")
    _, aport = host_port(cfg["admin"]["listen"])
    check(aport == eg["ports"]["admin"], "admin port differs from values")
    env = {e["name"]: e["value"] for e in mains["app"].get("env", [])}
    check(env.get(eg["sidecar"]["clientEnvName"]) == f"127.0.0.1:{bport}",
          f"client env {env} does not point at 127.0.0.1:{bport}")
    check_probes(c, aport)
    check_security(ctx, spec, c)
    check_checksum(pod["metadata"].get("annotations"), text)
    all_ports = [p["name"] for x in list(mains.values()) + list(inits.values()) for p in x.get("ports", [])]
    check(len(all_ports) == len(set(all_ports)), f"port names clash in the pod: {all_ports}")
    check(spec["terminationGracePeriodSeconds"] > cfg["drain_timeout_ms"] / 1000, "client pod grace < drain timeout")


def case_sidecar_container(ctx):
    check_sidecar(ctx, [], native=False, kube="v1.27.0")


def case_sidecar_native(ctx):
    check_sidecar(ctx, [ctx.value_file("sidecar-native.yaml")], native=True, kube="v1.29.0")
    r = ctx.render(ctx.client_chart, [ctx.value_file("sidecar-native.yaml")], kube="v1.28.4")
    check(r.returncode != 0 and "needs Kubernetes 1.29" in r.stderr,
          f"native sidecar on 1.28 should be refused, got rc={r.returncode} {r.stderr.strip()}")


def sample_for(schema):
    """A valid value for a (sub)schema of values.schema.json: every object key set."""
    if "enum" in schema:
        return schema["enum"][-1]
    t = schema.get("type")
    if t == "object":
        return {k: sample_for(v) for k, v in schema.get("properties", {}).items()}
    if t == "array":
        return [sample_for(schema["items"])] if "items" in schema else []
    if t == "boolean":
        return False
    if t == "integer":
        return max(schema.get("minimum", 0), 1)
    if t == "string":
        return "t*"
    raise Failure(f"no sample for schema {schema}")


def case_sasl_secret_mounted(ctx):
    """sasl.existingSecret: the Secret is a read-only volume at sasl.mountPath
    in the gateway, the sidecar and the native sidecar, so
    config.upstream_sasl.password_file can name a file in it; unset, nothing
    is mounted."""
    with tempfile.TemporaryDirectory() as tmp:
        def values(name, text):
            path = os.path.join(tmp, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return path
        gateway = values("gateway.yaml", "sasl:\n  existingSecret: kafka-creds\n"
                         "config:\n  upstream_sasl:\n    mechanism: SCRAM-SHA-512\n"
                         "    username: app\n    password_file: /etc/epochgate/sasl/password\n")
        sidecar = values("sidecar.yaml", "epochgate:\n  sasl:\n    existingSecret: app-creds\n"
                         "    mountPath: /var/run/kafka-sasl\n")
        renders = [
            (ctx.manifests(ctx.chart, [gateway]), "kafka-creds", "/etc/epochgate/sasl"),
            (ctx.manifests(ctx.client_chart, [sidecar], release="shop"), "app-creds",
             "/var/run/kafka-sasl"),
            (ctx.manifests(ctx.client_chart, [ctx.value_file("sidecar-native.yaml"), sidecar],
                           release="shop", kube="v1.30.0"), "app-creds", "/var/run/kafka-sasl"),
        ]
        for docs, secret, path in renders:
            spec = one(docs, "Deployment")["spec"]["template"]["spec"]
            volumes = {v["name"]: v for v in spec["volumes"]}
            check(volumes.get("epochgate-sasl", {}).get("secret", {}).get("secretName") == secret,
                  f"no Secret volume {secret}: {list(volumes)}")
            eg = [c for c in spec["containers"] + (spec.get("initContainers") or [])
                  if c["name"] == "epochgate"]
            check(len(eg) == 1, "one epochgate container expected")
            mount = [m for m in eg[0].get("volumeMounts", []) if m["name"] == "epochgate-sasl"]
            check(mount and mount[0]["mountPath"] == path and mount[0].get("readOnly") is True,
                  f"epochgate-sasl not mounted read-only at {path}: {mount}")
        plain = one(ctx.manifests(ctx.chart, []), "Deployment")["spec"]["template"]["spec"]
        check("epochgate-sasl" not in {v["name"] for v in plain["volumes"]},
              "a Secret volume without sasl.existingSecret")
        # Every pod mounting the password has an fsGroup: the file is 0440
        # (owner and that group), not world-readable 0644. A sidecar's pod
        # without one gets epochgate's runAsGroup; one with its own keeps it.
        own = values("own-group.yaml", "fsGroup: 2000\n")
        renders.append((ctx.manifests(ctx.client_chart, [sidecar, own], release="shop"),
                        "app-creds", "/var/run/kafka-sasl"))
        for (docs, _, _), group in zip(renders, (None, 10001, 10001, 2000)):
            spec = one(docs, "Deployment")["spec"]["template"]["spec"]
            vol = {v["name"]: v for v in spec["volumes"]}["epochgate-sasl"]["secret"]
            fs_group = spec["securityContext"].get("fsGroup")
            check(vol.get("defaultMode") == 0o440 and fs_group and group in (None, fs_group),
                  f"SASL Secret mode {vol.get('defaultMode')}, fsGroup {fs_group} (want 0440, "
                  f"{group or 'any'})")


def _tls_mounts(spec):
    """{volume name: (Secret name, mount path)} of the epochgate container's
    read-only Secret mounts, checked to be whole Secrets (no subPath, no
    items: only then does the kubelet update the files when it rotates)."""
    volumes = {v["name"]: v for v in spec["volumes"]}
    eg = [c for c in spec["containers"] + (spec.get("initContainers") or [])
          if c["name"] == "epochgate"]
    check(len(eg) == 1, "one epochgate container expected")
    out = {}
    for m in eg[0].get("volumeMounts", []):
        secret = volumes.get(m["name"], {}).get("secret")
        if not secret or m["name"] == "epochgate-sasl":
            continue
        check(m.get("readOnly") is True, f"{m['name']} mounted writable")
        check("subPath" not in m and "items" not in secret,
              f"{m['name']}: a subPath or items mount is never updated on rotation")
        out[m["name"]] = (secret["secretName"], m["mountPath"])
    return out


def _in_mount(path, mounts, secret, key):
    """The config names `key` of `secret` through its mount."""
    for name, (sec, mpath) in mounts.items():
        if sec == secret and path == f"{mpath}/{key}":
            return True
    return False


def case_tls_secrets_mounted(ctx):
    """tls and upstreamTls values: each Secret (cert-manager's layout: tls.crt,
    tls.key, ca.crt) is a whole, read-only Secret volume, and the config's
    tls / upstream_tls keys name its files, in the gateway, the sidecar and
    the native sidecar. A rotation changes files only: nothing the chart
    renders (annotations included) depends on a Secret's content, so the
    pods are not rolled and epochgate reloads the files. SNI routing exposes
    only the bootstrap port on the Service. Without the values, no TLS key
    and no TLS volume."""
    with tempfile.TemporaryDirectory() as tmp:
        def values(name, text):
            path = os.path.join(tmp, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return path
        gateway = values("gateway.yaml", (
            "tls:\n  existingSecret: gw-tls\n  clientAuth: required\n  clientCaSecret: client-ca\n"
            "  sni:\n    brokerHostPattern: b-$(nodeId).kafka.example.com\n"
            "    bootstrapHost: bootstrap.kafka.example.com\n"
            "upstreamTls:\n  enabled: true\n  caSecret: kafka-cluster-ca\n"
            "  clientSecret: gw-kafka-user\n"))
        docs = ctx.manifests(ctx.chart, [gateway])
        spec = one(docs, "Deployment")["spec"]["template"]["spec"]
        mounts = _tls_mounts(spec)
        check({s for s, _ in mounts.values()} == {"gw-tls", "client-ca", "kafka-cluster-ca",
                                                  "gw-kafka-user"}, f"TLS Secret mounts: {mounts}")
        _, cfg = config_of(docs, spec["volumes"][0]["configMap"]["name"])
        t, u = cfg["tls"], cfg["upstream_tls"]
        check(_in_mount(t["cert_file"], mounts, "gw-tls", "tls.crt") and
              _in_mount(t["key_file"], mounts, "gw-tls", "tls.key"), f"tls files: {t}")
        check(t["client_auth"] == "required" and _in_mount(t["client_ca_file"], mounts, "client-ca",
                                                            "ca.crt"), f"client CA: {t}")
        check(t["sni"] == {"broker_host_pattern": "b-$(nodeId).kafka.example.com",
                           "bootstrap_host": "bootstrap.kafka.example.com"}, f"sni: {t}")
        check(u["enabled"] is True and u["verify_hostname"] is True and
              _in_mount(u["ca_file"], mounts, "kafka-cluster-ca", "ca.crt") and
              _in_mount(u["cert_file"], mounts, "gw-kafka-user", "tls.crt") and
              _in_mount(u["key_file"], mounts, "gw-kafka-user", "tls.key"), f"upstream_tls: {u}")
        svc = one(docs, "Service", "gateway")
        check([p["name"] for p in svc["spec"]["ports"]] == ["bootstrap"],
              f"SNI routing: the Service should expose only bootstrap: {svc['spec']['ports']}")
        # No annotation follows a Secret: the only checksum is the config's.
        annotations = one(docs, "Deployment")["spec"]["template"]["metadata"].get("annotations", {})
        check(set(annotations) == {"checksum/epochgate-config"},
              f"pod annotations {annotations}: a Secret rotation must not roll the pods")

        # client CA from the same Secret (cert-manager's ca.crt), plain upstream CA only.
        same = values("same.yaml", "tls:\n  existingSecret: gw-tls\n  clientAuth: requested\n"
                                   "upstreamTls:\n  enabled: true\n  verifyHostname: false\n")
        docs = ctx.manifests(ctx.chart, [same])
        spec = one(docs, "Deployment")["spec"]["template"]["spec"]
        mounts = _tls_mounts(spec)
        _, cfg = config_of(docs, spec["volumes"][0]["configMap"]["name"])
        check(set(mounts) == {"epochgate-tls"}, f"mounts: {mounts}")
        check(_in_mount(cfg["tls"]["client_ca_file"], mounts, "gw-tls", "ca.crt"), f"{cfg['tls']}")
        check(cfg["upstream_tls"] == {"enabled": True, "verify_hostname": False},
              f"system trust store expected: {cfg['upstream_tls']}")
        check(len(one(docs, "Service", "gateway")["spec"]["ports"]) > 1,
              "without SNI every broker port stays on the Service")

        sidecar = values("sidecar.yaml", "epochgate:\n  upstreamTls:\n    enabled: true\n"
                                         "    caSecret: kafka-cluster-ca\n    clientSecret: app-user\n")
        for files in ([sidecar], [ctx.value_file("sidecar-native.yaml"), sidecar]):
            docs = ctx.manifests(ctx.client_chart, files, release="shop", kube="v1.30.0")
            spec = one(docs, "Deployment")["spec"]["template"]["spec"]
            mounts = _tls_mounts(spec)
            check({s for s, _ in mounts.values()} == {"kafka-cluster-ca", "app-user"},
                  f"sidecar TLS mounts: {mounts}")
            cms = by_kind(docs, "ConfigMap")
            _, cfg = config_of(docs, cms[0]["metadata"]["name"])
            u = cfg["upstream_tls"]
            check(_in_mount(u["ca_file"], mounts, "kafka-cluster-ca", "ca.crt") and
                  _in_mount(u["key_file"], mounts, "app-user", "tls.key"), f"sidecar: {u}")
            check("tls" not in cfg, "client-facing TLS rendered without tls.existingSecret")
            # The keys are readable by the pod's fsGroup only, never 0644.
            modes = {v["name"]: v["secret"].get("defaultMode") for v in spec["volumes"]
                     if "secret" in v}
            check(set(modes.values()) == {0o440} and spec["securityContext"].get("fsGroup"),
                  f"sidecar TLS Secret modes {modes}, fsGroup "
                  f"{spec['securityContext'].get('fsGroup')}")

    docs = ctx.manifests(ctx.chart, [])
    spec = one(docs, "Deployment")["spec"]["template"]["spec"]
    _, cfg = config_of(docs, spec["volumes"][0]["configMap"]["name"])
    check(not _tls_mounts(spec) and "tls" not in cfg and "upstream_tls" not in cfg,
          "TLS rendered without TLS values")


def case_config_keys_known(ctx):
    """Every epochgate key the schema lets users set under config: renders, and
    (with the binary) epochgate accepts all of them at once."""
    with open(os.path.join(ctx.chart, "values.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    config = sample_for(schema["properties"]["config"])
    # Cross-field rules the schema leaves to epochgate: low < high <= budget.
    config["limits"].update(low_watermark_bytes=1024, high_watermark_bytes=4096, buffer_budget_bytes=1 << 20)
    config["drain_timeout_ms"] = 1000
    config["refresher"]["topic_idle_ms"] = 1000  # 0 or at least 1000 (the schema's "not")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "all-config-keys.yaml")
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump({"config": config}, f)
        docs = ctx.manifests(ctx.chart, [path])
    vals = chart_values(ctx)
    vals["config"] = config
    check_gateway(ctx, docs, vals)


def rejected_value_files(ctx):
    """(path, reason) of tests/helm/values/rejected/*.yaml: each file's
    `# refused: TEXT` line is what Helm must say when it refuses it."""
    out = []
    rdir = os.path.join(ctx.values_dir, "rejected")
    for name in sorted(os.listdir(rdir)):
        path = os.path.join(rdir, name)
        with open(path, encoding="utf-8") as f:
            reasons = re.findall(r"^# refused: (.+)$", f.read(), re.M)
        check(len(reasons) == 1, f"{path} has no single '# refused: ...' line")
        out.append((path, reasons[0]))
    check(len(out) >= 10, f"only {len(out)} rejected value files")
    return out


def case_values_rejected(ctx):
    """Helm itself refuses each file: `helm template` fails, saying why (the
    schema's location, or the template's own message). Files the schema
    refuses fail `helm lint --strict` too (lint reports a template's `fail`
    only as information)."""
    by_schema = 0
    for path, reason in rejected_value_files(ctx):
        r = ctx.render(ctx.chart, [path])
        check(r.returncode != 0, f"helm template accepted {os.path.basename(path)}")
        check(reason in r.stderr, f"{os.path.basename(path)} refused without saying {reason!r}: {r.stderr.strip()}")
        if reason.startswith("at '/"):
            by_schema += 1
            r = ctx.run([ctx.helm, "lint", "--strict", ctx.chart, "-f", ctx.value_file("image.yaml"),
                         "-f", path])
            check(r.returncode != 0 and reason in r.stdout + r.stderr,
                  f"helm lint --strict accepted {os.path.basename(path)}:\n{r.stdout}")
    check(by_schema >= 5, f"only {by_schema} files are refused by values.schema.json")
    r = ctx.render(ctx.chart, kube="v1.24.0")
    check(r.returncode != 0 and "kubeVersion" in r.stderr, "Chart.yaml kubeVersion not enforced")


def case_lint(ctx):
    """`helm lint --strict` passes for the chart with each accepted values
    file, and for the example client chart (the sidecar mode)."""
    files = [None] + [ctx.value_file(n) for n in sorted(os.listdir(ctx.values_dir)) if n.endswith(".yaml")
                      and n != "sidecar-native.yaml"]
    for f in files:
        r = ctx.run([ctx.helm, "lint", "--strict", ctx.chart, "-f", ctx.value_file("image.yaml")]
                    + (["-f", f] if f else []))
        check(r.returncode == 0, f"helm lint --strict {os.path.basename(f or 'defaults')}:\n{r.stdout}{r.stderr}")
    for f in (None, ctx.value_file("sidecar-native.yaml")):
        r = ctx.run([ctx.helm, "lint", "--strict", ctx.client_chart] + (["-f", f] if f else []))
        check(r.returncode == 0, f"helm lint --strict client chart:\n{r.stdout}{r.stderr}")


def deploy_md_helm_installs(ctx):
    """The `helm install` commands of docs/deploy.md's sh blocks, continuation
    lines joined, in document order."""
    with open(os.path.join(ctx.repo, "docs", "deploy.md"), encoding="utf-8") as f:
        text = f.read()
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [line.strip() for line in joined.splitlines() if line.strip().startswith("helm install ")]
    return commands


def case_docs_install_commands(ctx):
    """Each `helm install` in docs/deploy.md, run as written from the
    repository root with --dry-run=client appended (no cluster here), renders
    valid manifests of the mode it claims: both modes and both sidecar kinds."""
    commands = deploy_md_helm_installs(ctx)
    seen = set()
    for command in commands:
        argv = shlex.split(command)
        r = ctx.run([ctx.helm] + argv[1:] + ["--dry-run=client"])
        check(r.returncode == 0, f"docs/deploy.md: `{command}` fails:\n{r.stderr.strip()}")
        manifest = r.stdout.split("\nMANIFEST:\n", 1)[-1].split("\nNOTES:\n", 1)[0]
        docs = ctx.parse_manifests(manifest)
        deps = by_kind(docs, "Deployment")
        check(len(deps) == 1, f"`{command}` renders {len(deps)} Deployments")
        spec = deps[0]["spec"]["template"]["spec"]
        inits = [c for c in spec.get("initContainers") or [] if c["name"] == "epochgate"]
        mains = [c for c in spec["containers"] if c["name"] == "epochgate"]
        if deps[0]["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "gateway":
            seen.add("gateway")
        elif inits and inits[0].get("restartPolicy") == "Always":
            seen.add("native sidecar")
        elif mains and len(spec["containers"]) > 1:
            seen.add("sidecar container")
    check(seen == {"gateway", "sidecar container", "native sidecar"},
          f"docs/deploy.md's helm install commands cover {sorted(seen)} of gateway, sidecar container, "
          f"native sidecar: {commands}")


def case_versions_match(ctx):
    with open(os.path.join(ctx.chart, "Chart.yaml"), encoding="utf-8") as f:
        meta = yaml.safe_load(f)
    with open(os.path.join(ctx.repo, "CMakeLists.txt"), encoding="utf-8") as f:
        project = re.search(r"project\(epochgate\s+VERSION\s+([0-9.]+)", f.read())
    check(project, "no project(epochgate VERSION ...) in CMakeLists.txt")
    vals = chart_values(ctx)
    check(meta["appVersion"] == project.group(1) == vals["image"]["tag"],
          f"appVersion {meta['appVersion']}, image.tag {vals['image']['tag']} and CMake VERSION "
          f"{project.group(1)} must agree")


def case_packaged_chart_installs(ctx):
    """`helm package` makes the chart archive an operator pushes to a chart
    repository; installing that archive (not the folder) renders the same
    gateway, valid by the Kubernetes schemas."""
    with tempfile.TemporaryDirectory() as tmp:
        r = ctx.run([ctx.helm, "package", ctx.chart, "-d", tmp])
        check(r.returncode == 0, f"helm package failed: {r.stderr.strip()}")
        archives = [f for f in os.listdir(tmp) if f.endswith(".tgz")]
        vals = chart_values(ctx)
        check(len(archives) == 1, f"helm package made {archives}")
        with open(os.path.join(ctx.chart, "Chart.yaml"), encoding="utf-8") as f:
            version = yaml.safe_load(f)["version"]
        check(archives[0] == f"epochgate-{version}.tgz", f"archive {archives[0]}, chart version {version}")
        packaged = os.path.join(tmp, archives[0])
        docs = ctx.manifests(packaged)
        check_gateway(ctx, docs, vals)
        r = ctx.render(packaged, notes=True)
        check(r.returncode == 0 and "\nNOTES:\n" in r.stdout,
              f"helm install --dry-run=client of the archive: {r.stderr.strip()}")


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k8s-tools", help="directory tools/fetch-k8s-tools.sh prints (default: run it)")
    ap.add_argument("--repo", required=True)
    ap.add_argument("--epochgate", default="")
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    if not args.k8s_tools:
        r = subprocess.run([os.path.join(args.repo, "tools", "fetch-k8s-tools.sh")], capture_output=True,
                           text=True, timeout=300, check=False)
        if r.returncode != 0:
            print(f"FAIL {args.case}: tools/fetch-k8s-tools.sh: {r.stderr.strip()}")
            return 1
        args.k8s_tools = r.stdout.strip()
    ctx = Ctx(args)
    try:
        CASES[args.case](ctx)
    except Failure as e:
        print(f"FAIL {args.case}: {e}")
        return 1
    finally:
        shutil.rmtree(ctx.home, ignore_errors=True)
    extra = f", {ctx.validated} manifest(s) valid by the Kubernetes schemas"
    extra += f", {ctx.checked} config(s) accepted by epochgate --check-config" if ctx.epochgate else ""
    print(f"PASS {args.case}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
