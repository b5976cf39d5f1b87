"""A real Prometheus (Debian's prometheus 2.x) scrapes a running epochgate
the way the chart's ServiceMonitor tells the Prometheus Operator to, and
every query of the chart's Grafana dashboard returns data after real traffic
and a leader move: librdkafka 2.15.1 producing (idempotent, acks=all) and
consuming in a group while a partition's leader moves, kcat (Debian's
librdkafka 2.0.2, which sends no leader epoch) consuming, an epoch-less
Fetch v9 (epochgate writes its view's epoch in), a client sending a
frame with a negative size, pipelining past limits.max_in_flight_per_connection,
and a config reload (SIGHUP). `promtool check metrics` accepts /metrics.

The ServiceMonitor and the dashboard come from `helm template` of the chart
(tests/helm/values/monitoring.yaml, scrape interval set to 2s so the test
is short); the scrape job is what the Operator derives from them: metrics
path, scheme, interval and timeout from the endpoint, `job` the Service's
name, `namespace`, `service`, `endpoint` labels. Panels are evaluated as
Grafana does for a time series panel: a range query over the traffic, step =
scrape interval, $__rate_interval = 4 x scrape interval, the template
variables $job and $instance set to what their own label_values queries
return. A query that returns no series, or (for rate/increase/quantile) no
non-zero value, fails the test. Alert rules: the chart's PrometheusRule
(metrics.prometheusRule) is loaded into the same Prometheus; every rule must
be evaluated without error, each selector must match the scraped series
where the metric exists, and a refused config reload at the end must fire
EpochgateConfigReloadRefused.

Runs as PYTHONPATH=tests/lib /usr/bin/python3 tests/monitoring/test_prometheus.py --build-dir BUILD.
Owns: the dashboard's and the scrape config's contract with Prometheus.
Must never: bind anything but 127.0.0.1, or leave Prometheus running.
"""

import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
from epochgate_testlib import prom_text  # noqa: E402
from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "dashboard"
SCRAPE_S = 2
RELEASE, NAMESPACE = "prod", "kafka"


def k8s_tools():
    r = subprocess.run([os.path.join(REPO, "tools", "fetch-k8s-tools.sh")], capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, "tools/fetch-k8s-tools.sh: " + r.stderr.strip()
    return r.stdout.strip()


def rendered_monitoring(h):
    """(ServiceMonitor, admin Service, dashboard JSON, PrometheusRules) from
    `helm template` with the monitoring values."""
    home = os.path.join(h.workdir, "helm-home")  # Helm's caches, not the user's
    env = dict(os.environ, HOME=home, HELM_CACHE_HOME=home + "/cache", HELM_CONFIG_HOME=home + "/config",
               HELM_DATA_HOME=home + "/data", KUBECONFIG="/dev/null")
    r = subprocess.run([os.path.join(k8s_tools(), "helm"), "template", RELEASE,
                        os.path.join(REPO, "helm", "epochgate"), "-n", NAMESPACE,
                        "-f", os.path.join(REPO, "tests", "helm", "values", "image.yaml"),
                        "-f", os.path.join(REPO, "tests", "helm", "values", "monitoring.yaml"),
                        "--set", "metrics.serviceMonitor.interval=%ds" % SCRAPE_S,
                        "--set", "metrics.serviceMonitor.scrapeTimeout=%ds" % (SCRAPE_S - 1)],
                       capture_output=True, text=True, timeout=60, env=env, check=False)
    assert r.returncode == 0, "helm template: " + r.stderr.strip()
    docs = [d for d in yaml.safe_load_all(r.stdout) if d]
    sms = [d for d in docs if d["kind"] == "ServiceMonitor"]
    assert len(sms) == 1, "expected one ServiceMonitor, got %d" % len(sms)
    sm = sms[0]
    services = [d for d in docs if d["kind"] == "Service"
                and all(d["metadata"]["labels"].get(k) == v
                        for k, v in sm["spec"]["selector"]["matchLabels"].items())]
    assert len(services) == 1, "the ServiceMonitor selects %d Services" % len(services)
    boards = [d for d in docs if d["kind"] == "ConfigMap"
              and d["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
    assert len(boards) == 1, "no dashboard ConfigMap"
    board = json.loads(next(iter(boards[0]["data"].values())))
    rules = [d for d in docs if d["kind"] == "PrometheusRule"]
    return sm, services[0], board, rules


def scrape_config(sm, svc, admins):
    """The scrape job the Prometheus Operator builds from the ServiceMonitor's
    first endpoint, with the pods' admin addresses as the targets."""
    ep = sm["spec"]["endpoints"][0]
    ns = sm["metadata"]["namespace"]

    def fixed(label, value):
        return {"target_label": label, "replacement": value, "action": "replace"}
    return {
        "global": {"scrape_interval": ep["interval"], "evaluation_interval": ep["interval"]},
        "scrape_configs": [{
            "job_name": "serviceMonitor/%s/%s/0" % (ns, sm["metadata"]["name"]),
            "metrics_path": ep["path"],
            "scheme": ep["scheme"],
            "scrape_interval": ep["interval"],
            "scrape_timeout": ep["scrapeTimeout"],
            "static_configs": [{"targets": list(admins)}],
            "relabel_configs": [fixed("namespace", ns), fixed("service", svc["metadata"]["name"]),
                                fixed("endpoint", ep["port"]), fixed("job", svc["metadata"]["name"])],
        }],
    }


def free_port():
    with socket.socket() as s:
        s.bind((harness.LOOPBACK, 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, h, config):
        binary = shutil.which("prometheus")
        assert binary, "prometheus is not installed (tools/setup.sh installs Debian's prometheus)"
        path = os.path.join(h.workdir, "prometheus.yml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        r = h.run(["promtool", "check", "config", path], check=False)
        assert r.returncode == 0, "promtool check config: %s%s" % (r.stdout, r.stderr)
        for attempt in range(5):
            self.address = "%s:%d" % (harness.LOOPBACK, free_port())
            self.proc = harness.Process("prometheus", [
                binary, "--config.file=" + path, "--storage.tsdb.path=" + os.path.join(h.workdir, "tsdb"),
                "--web.listen-address=" + self.address, "--log.level=warn"], h.workdir)
            h.on_close(lambda p=self.proc: p.stop(signal.SIGTERM, timeout=20))
            try:
                harness.wait_until(lambda: self.ready(), 30, what="prometheus /-/ready")
                return
            except AssertionError:
                if self.proc.alive() or attempt == 4:
                    raise
                # The port was taken between free_port() and the bind: another one.

    def ready(self):
        if not self.proc.alive():
            raise AssertionError("prometheus exited: " + self.proc.tail())
        try:
            with urllib.request.urlopen("http://%s/-/ready" % self.address, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def api(self, path, **params):
        url = "http://%s/api/v1/%s?%s" % (self.address, path, urllib.parse.urlencode(params, doseq=True))
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                body = json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise AssertionError("prometheus %s %s: %d %s" % (path, params, e.code, e.read()[:400]))
        assert body["status"] == "success", body
        return body["data"]


def panel_queries(board):
    out = []
    for p in board["panels"]:
        for t in p.get("targets", []):
            out.append((p["title"], t["expr"]))
    return out


def grafana_expand(expr, variables):
    for name, value in variables.items():
        expr = expr.replace("$" + name, value).replace("${%s}" % name, value)
    assert "$" not in expr, "unexpanded variable in %s" % expr
    return expr


def generate_traffic(h, cluster, gate, config_path):
    """Real clients through epochgate, a leader move the view learns first,
    and the odd traffic some panels count."""
    gc = sl.GateClient(h, gate)
    sl.open_node_connections(gc, [TOPIC])
    check = h.rdkafka_check_async([
        "--bootstrap", gate.bootstrap, "--topic", TOPIC, "--partitions-keyed", "--idempotent",
        "--acks", "all", "--duration-s", "8", "--rate", "400", "--concurrent",
        "--consume-group", "dashboard-group"])
    time.sleep(2.5)
    new = sl.other_broker(cluster.partition(TOPIC, 0)["leader"])
    sl.move_view_first(cluster, gc, TOPIC, 0, new)
    # kcat on Debian's librdkafka 2.0.2 fetches with CurrentLeaderEpoch -1.
    h.kcat(["-b", gate.bootstrap, "-C", "-t", TOPIC, "-o", "beginning", "-e", "-q", "-c", "200"], timeout=60)
    # kcat's Fetch v11 goes to the leader's listener, where epochgate injects
    # no epoch (any replica serves it, KIP-392); an epoch-less Fetch v9 gets
    # the view's epoch written in at the leader's listener too (the "Epochs
    # injected" panel). Only while the view's entry is fresh and trusted:
    # right after the move a fenced answer can leave it suspect until the
    # next refresh (1 s here), and then the fetch goes on as sent. So send
    # until one is injected.
    deadline = time.monotonic() + 15
    while True:
        corr = gc.next_corr()
        frame = sw.fetch_request(corr, TOPIC, [(0, -1, 0)], version=9)
        r = sw.parse_fetch_response(gc.exchange(frame, node=new), 9)
        assert r["partitions"][(TOPIC, 0)]["error"] == 0, r
        if prom_text.metric(gate.metrics(), "epochgate_epochs_injected_total") > 0:
            break
        assert time.monotonic() < deadline, "no epoch-less Fetch v9 got the view's epoch in 15 s"
        time.sleep(0.5)
    # Pipelined requests past max_in_flight_per_connection: reading pauses.
    conn = sl.connect(gate.bootstrap_address)
    h.on_close(conn.close)
    ids = list(range(5000, 5030))
    conn.send(b"".join(kw.metadata_request(i, [TOPIC], version=1) for i in ids))
    got = [kw.frame_correlation_id(conn.recv_frame(timeout=30), is_request=False) for _ in ids]
    assert got == ids, "pipelined requests answered out of order: %s" % got
    # A frame with a negative size: counted, that connection closed.
    bad = socket.create_connection(gate.bootstrap_address, timeout=5)
    bad.sendall(b"\xff\xff\xff\xf0")
    bad.settimeout(5)
    try:
        assert bad.recv(1) == b"", "epochgate answered a negative frame size"
    except ConnectionResetError:
        pass
    bad.close()
    # A config reload: the same file re-read on SIGHUP.
    gate.proc.proc.send_signal(signal.SIGHUP)
    s = check.result(timeout=90)
    assert s["missing"] == 0 and s["duplicates"] == 0 and s["acked"] > 0, s
    return s


class SilentBroker:
    """A loopback listener whose connections are accepted by the kernel and
    never read: epochgate's ApiVersions on them goes unanswered."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind((harness.LOOPBACK, 0))
        self.sock.listen(16)
        self.address = "%s:%d" % self.sock.getsockname()

    def close(self):
        self.sock.close()


def start_failing_gate(h):
    """A second pod of the same job whose first deployment goes wrong the
    ways the dashboard's failure panels show: client TLS with a certificate
    (its expiry), a plaintext client on the TLS port, a bootstrap list
    whose first broker never answers and second refuses, and a third that
    refuses its SCRAM login (a wrong password). Its sessions log in with the
    sidecar credential, so each probes its broker first (sessions whose
    clients log in themselves no longer do)."""
    from epochgate_testlib.tls_lib import tls_rig  # noqa: E402
    from epochgate_testlib.scram_broker import ScramBroker  # noqa: E402
    sasl = ScramBroker("app", "the-right-password", iterations=4096)
    h.on_close(sasl.close)
    certs = tls_rig.make_certs(os.path.join(h.workdir, "certs"))
    silent = SilentBroker()
    h.on_close(silent.close)
    refused = socket.socket()  # bound, never listening: connects are refused
    refused.bind((harness.LOOPBACK, 0))
    h.on_close(refused.close)
    password = os.path.join(h.workdir, "password")
    fd = os.open(password, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, b"not-a-kafka-password\n")
    os.close(fd)
    config = sl.write_config(h, (
        "tls:\n  cert_file: %s\n  key_file: %s\n"
        "upstream_sasl:\n  mechanism: SCRAM-SHA-512\n  username: app\n  password_file: %s\n"
        "  on_behalf_of_clients: true\n"
        "limits:\n  upstream_connect_timeout_ms: 1000\n"
        % (certs.path("server", "crt"), certs.path("server", "key"), password)), "failing.yaml")
    bootstrap = "%s,%s:%d,%s" % (silent.address, harness.LOOPBACK, refused.getsockname()[1],
                                 sasl.bootstrap)
    gate = h.start_gate(bootstrap, ["--config", config])
    gate.certs = certs
    return gate


def generate_failures(h, gate):
    """A plaintext client on the TLS listener, and TLS clients whose
    sessions dial the unanswering and the refusing broker first."""
    bad = socket.create_connection(gate.bootstrap_address, timeout=5)
    bad.sendall(kw.api_versions_request(1, 0))
    bad.settimeout(5)
    try:
        bad.recv(1)
    except OSError:
        pass
    bad.close()
    ctx = ssl.create_default_context(cafile=gate.certs.ca)
    ctx.check_hostname = False
    for i in range(2):
        conn = sl.connect(gate.bootstrap_address, timeout=15, tls=ctx)
        h.on_close(conn.close)
        conn.send(kw.api_versions_request(10 + i, 0))
        try:
            conn.recv_frame(timeout=15)
        except Exception:  # noqa: BLE001  (only the dials are wanted here)
            pass


def test_dashboard_queries_return_data_in_real_prometheus(h):
    sm, svc, board, rules = rendered_monitoring(h)
    assert len(rules) == 1, "expected the chart's PrometheusRule, got %d" % len(rules)
    rules_path = os.path.join(h.workdir, "rules.yml")
    with open(rules_path, "w") as f:
        yaml.safe_dump({"groups": rules[0]["spec"]["groups"]}, f)
    r = h.run(["promtool", "check", "rules", rules_path], check=False)
    assert r.returncode == 0, "promtool check rules:\n%s%s" % (r.stdout, r.stderr)
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    # Periodic refreshes every second (default 30 s, longer than the traffic)
    # so the refresh panel has increments inside the test's time range.
    # Rerouting on the topic, so the leader move reroutes stale Produce
    # partitions for the reroute panel.
    config_path = sl.write_config(h, "limits:\n  max_in_flight_per_connection: 4\n"
                                     "refresher:\n  interval_ms: 1000\n"
                                     "policy:\n  rules:\n    - topics: \"%s\"\n"
                                     "      mode: enforce\n      reroute: true\n" % TOPIC)
    gate = sl.start_gate(h, cluster, args=["--config", config_path])

    r = h.run(["promtool", "check", "metrics"], input=gate.metrics().encode(), check=False)
    assert r.returncode == 0, "promtool check metrics:\n%s%s" % (r.stdout, r.stderr)

    failing = start_failing_gate(h)

    prom_config = scrape_config(sm, svc, [gate.admin, failing.admin])
    prom_config["rule_files"] = [rules_path]
    prom = Prometheus(h, prom_config)
    harness.wait_until(lambda: prom.api("targets")["activeTargets"]
                       and all(t["health"] == "up" for t in prom.api("targets")["activeTargets"]),
                       20, what="the epochgate target up")
    started = time.time()
    summary = generate_traffic(h, cluster, gate, config_path)
    generate_failures(h, failing)
    # Three more scrapes, so every rate window ends after the traffic.
    time.sleep(3 * SCRAPE_S + 1)
    ended = time.time()

    # Template variables, by their own queries (label_values(metric{sel}, label)).
    variables = {}
    for var in board["templating"]["list"]:
        if var["type"] != "query":
            continue
        m = re.match(r"label_values\((\w+)(\{.*\})?, *(\w+)\)$", var["definition"])
        assert m, "template variable %s: unsupported query %s" % (var["name"], var["definition"])
        selector = grafana_expand(m.group(1) + (m.group(2) or ""), variables)
        values = prom.api("label/%s/values" % m.group(3), **{"match[]": selector})
        assert values, "template variable $%s: %s returns nothing" % (var["name"], var["definition"])
        # A multi-value variable becomes an alternation of the values with
        # regex metacharacters escaped inside the PromQL string, as Grafana does.
        variables[var["name"]] = "|".join(re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\\\1", v) for v in values)
    assert variables.get("job") == svc["metadata"]["name"].replace(".", "\\\\."), variables
    variables["__rate_interval"] = "%ds" % (4 * SCRAPE_S)

    empty = []
    shown = []
    for title, expr in panel_queries(board):
        q = grafana_expand(expr, variables)
        data = prom.api("query_range", query=q, start="%.3f" % (started - 5), end="%.3f" % ended,
                        step="%ds" % SCRAPE_S)
        values = [float(v) for series in data["result"] for _, v in series["values"]]
        live = [v for v in values if v == v and v != 0]  # not NaN, not zero
        needs_nonzero = re.search(r"\b(rate|increase|histogram_quantile)\(", expr) is not None
        if not data["result"] or (needs_nonzero and not live):
            empty.append("%s: %s -> %d series, %d non-zero values" % (title, q, len(data["result"]), len(live)))
        else:
            shown.append("%s (%d series, max %.3g)" % (title, len(data["result"]), max(live or values)))
    assert not empty, "dashboard panels without data:\n  " + "\n  ".join(empty)
    h.note("%d panel queries return data; producer acked %d, consumed %d" % (
        len(shown), summary["acked"], summary["consumed"]))
    for line in shown:
        h.note(line)
    check_alert_rules(h, prom, gate, config_path)


def check_alert_rules(h, prom, gate, config_path):
    """Every rule evaluated without error; the selectors match the series
    the scrape produced (so job and namespace are the ServiceMonitor's);
    a refused reload fires EpochgateConfigReloadRefused."""
    def rules():
        return [r for g in prom.api("rules")["groups"] for r in g["rules"]]
    harness.wait_until(lambda: all(r.get("lastEvaluation", "0001").startswith("20")
                                   for r in rules()), 30, what="every alert rule evaluated")
    bad = ["%s: %s (%s)" % (r["name"], r["health"], r.get("lastError")) for r in rules()
           if r["health"] != "ok"]
    assert not bad, "alert rules that do not evaluate:\n  " + "\n  ".join(bad)
    # A selector that matched nothing would make its alert silent for ever.
    for r in rules():
        m = re.search(r"(epochgate_\w+)(\{[^}]*\})", r["query"])
        assert m, "rule %s names no epochgate metric: %s" % (r["name"], r["query"])
        if not prom.api("query", query=m.group(1))["result"]:
            continue  # the metric has no series yet (no TLS, no reroute): nothing to match
        assert prom.api("query", query=m.group(1) + m.group(2))["result"], \
            "rule %s: %s%s matches none of the scraped series" % (r["name"], m.group(1), m.group(2))
    with open(config_path, "a") as f:
        f.write("limits:\n  no_such_key: 1\n")
    gate.proc.proc.send_signal(signal.SIGHUP)
    harness.wait_until(lambda: any(r["name"] == "EpochgateConfigReloadRefused"
                                   and r["state"] == "firing" for r in rules()),
                       6 * SCRAPE_S + 10, what="EpochgateConfigReloadRefused firing")
    h.note("%d alert rules evaluated; EpochgateConfigReloadRefused fired on a refused reload"
           % len(rules()))


if __name__ == "__main__":
    harness.main(globals())
