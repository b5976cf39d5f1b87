"""Shared pieces of the real-Kafka tests: one Apache Kafka cluster per test
module (tools/kafka/kafka_cluster.py, formatted fresh), the Java driver
(EgDriver.java) and Kafka's own Verifiable* tools run against it, the
cluster's own view of leaders and epochs (Metadata v12 asked of every
broker, not through epochgate), and which ports a Java client connected to.

Owns: the module's cluster (started on first use, stopped at exit, and any
JVM a killed earlier run left in the same directory ended by pid), the Java
runs' log files. It reuses tests/lib/epochgate_testlib/harness.py and
tests/lib/epochgate_testlib/scenario_lib.py (imported, never copied) and must never
decide a verdict from epochgate's log text.
"""

import atexit
import json
import os
import re
import signal
import subprocess
import time

from . import ROOT, load_tool, test_area

# The realkafka tests' folder (EgDriver.java).
HERE = test_area("realkafka")
from . import harness  # noqa: E402
kafka_cluster = load_tool("tools/kafka/kafka_cluster.py")
from . import kafka_wire as kw  # noqa: E402
from . import scenario_lib as sl  # noqa: E402
from . import scenario_wire as sw  # noqa: E402

_cluster = None
# The brokers' line for this module's cluster; a file about older brokers
# sets it before its first test. The clients stay kafka-clients 4.4.0.
VERSION = kafka_cluster.DEFAULT_VERSION
# True: the module's cluster also has SASL_PLAINTEXT and SASL_SSL listeners
# (sasl_cases.py); a module sets it before its first test.
SECURITY = False
# Broker settings added to every broker of this module's cluster (for
# example a KIP-368 session lifetime); a module sets it before its first test.
BROKER_CONFIG = {}


def _end_leftovers(directory):
    """Ends JVMs an earlier, killed run of this module left running in
    `directory` (matched by pid and by the directory in their command line)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ")
        except OSError:
            continue
        if b"java" in cmd and (directory + "/").encode() in cmd:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


def cluster(h):
    """The module's cluster, started (formatted fresh) on first use."""
    global _cluster
    if _cluster is None:
        directory = os.path.join(h.build_dir, "tests", "realkafka", "cluster-" + h.options.file_stem)
        _end_leftovers(directory)
        c = kafka_cluster.KafkaCluster(directory, version=VERSION, security=SECURITY,
                                       extra_config=BROKER_CONFIG)
        try:
            c.start()
        except FileNotFoundError as e:
            raise harness.Skip("no Java or Maven here (%s); tools/setup.sh installs them" % e)
        _cluster = c
        atexit.register(c.stop)
        rss = c.rss_mib()
        h.note("kafka %s cluster up in %.1fs (format %.1fs), RSS %d MiB (%s)" % (
            c.version, c.start_seconds, c.format_seconds, sum(rss.values()),
            ", ".join("node%d %d" % (k, v) for k, v in sorted(rss.items()))))
    else:
        # A test that stopped a broker and failed may have left it down.
        for b in kafka_cluster.BROKERS:
            if not _cluster.nodes[b].alive():
                _cluster.start_broker(b)
    return _cluster


def create_topic(c, topic, partitions=3, config="min.insync.replicas=2"):
    """A topic with fixed preferred leaders 1, 2, 3 (RF 3); min.insync.replicas
    per topic because 4.x ELR ignores the broker-level setting."""
    rotations = ["1:2:3", "2:3:1", "3:1:2"]
    assign = ",".join(rotations[i % 3] for i in range(partitions))
    c.ctl("create %s %d %s %s" % (topic, partitions, assign, config))
    return topic


# ------------------------------------------------------------- the cluster's view

def cluster_metadata(c, topics):
    """Metadata v12 from every live broker; returns the answer once all of
    them agree on leader and epoch of every partition of `topics` (the
    controller's decisions, as each broker applied them), else the first."""
    answers = []
    for b in kafka_cluster.BROKERS:
        if not c.nodes[b].alive():
            continue
        try:
            conn = sl.connect(c.broker_address(b), timeout=5)
            try:
                conn.send(sw.metadata_request_v12(0x5245, list(topics)))
                answers.append(sw.parse_metadata_response_v12(conn.recv_frame()))
            finally:
                conn.close()
        except (OSError, kw.WireError):
            continue
    if not answers:
        raise AssertionError("no broker answered Metadata")
    return answers[0], all(_leaders(a, topics) == _leaders(answers[0], topics) for a in answers)


def _leaders(md, topics):
    return {(t, i): (p["leader"], p["leader_epoch"])
            for t in topics for i, p in md["topics"].get(t, {"partitions": {}})["partitions"].items()}


def leaders(c, topics, timeout=15.0):
    """{(topic, partition): (leader, epoch)} once every live broker agrees."""
    deadline = time.monotonic() + timeout
    while True:
        md, agreed = cluster_metadata(c, topics)
        lead = _leaders(md, topics)
        if agreed and all(l >= 0 for l, _ in lead.values()):
            return lead
        if time.monotonic() > deadline:
            raise AssertionError("brokers did not agree on leaders of %s: %s" % (topics, lead))
        time.sleep(0.05)


def view_leaders(gate, topics):
    out = {}
    for t in sl.view(gate)["topics"]:
        if t["name"] in topics:
            for p in t["partitions"]:
                out[(t["name"], p["partition"])] = (p["leader"], p["epoch"])
    return out


def wait_view_matches(gate, c, topics, timeout):
    """Waits until epochgate's /debug/metadata names the same leader and
    epoch as the cluster for every partition of `topics`; returns seconds."""
    t0 = time.monotonic()
    want = leaders(c, topics)
    while True:
        got = view_leaders(gate, topics)
        if all(got.get(k) == v for k, v in want.items()):
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise AssertionError("epochgate's view %s != cluster %s after %.1fs" % (
                {k: got.get(k) for k in want}, want, timeout))
        time.sleep(0.05)
        want = leaders(c, topics)


def gate_ports(gate):
    """Every port epochgate advertises (bootstrap + one per node)."""
    conn = sl.connect(gate.bootstrap_address)
    try:
        conn.send(sw.metadata_request_v12(0x4750, []))
        md = sw.parse_metadata_response_v12(conn.recv_frame())
    finally:
        conn.close()
    return {gate.bootstrap_address[1]} | {p for _, p in md["brokers"].values()}


# ------------------------------------------------------------------ Java runs

LOG4J_CONN = """appender.e.type=Console
appender.e.name=ERR
appender.e.target=SYSTEM_ERR
appender.e.layout.type=PatternLayout
appender.e.layout.pattern=[%%d] %%p %%m (%%c)%%n
appender.f.type=File
appender.f.name=CONN
appender.f.fileName=%s
appender.f.layout.type=PatternLayout
appender.f.layout.pattern=%%m%%n
appender.f.filter.r.type=RegexFilter
appender.f.filter.r.regex=.*Initiating connection to node.*
appender.f.filter.r.onMatch=ACCEPT
appender.f.filter.r.onMismatch=DENY
rootLogger.level=WARN
rootLogger.appenderRef.e.ref=ERR
logger.nc.name=org.apache.kafka.clients.NetworkClient
logger.nc.level=DEBUG
logger.nc.additivity=false
logger.nc.appenderRef.f.ref=CONN
"""

# "Initiating connection to node 127.0.0.1:9092 (id: 3 rack: null ...)"
CONNECT = re.compile(r"Initiating connection to node \S+:(\d+) \(id:")


def client_prefix():
    """The Java clients' and tools' jars: always the pinned 4.x line."""
    return kafka_cluster.fetch(kafka_cluster.DEFAULT_VERSION)


def java_argv(h, c, main, args, name, classes=None):
    """argv of a Java client run; its NetworkClient connection lines go to
    WORKDIR/name.connections."""
    conn_log = os.path.join(h.workdir, name + ".connections")
    cfg = os.path.join(h.workdir, name + ".log4j2.properties")
    with open(cfg, "w") as f:
        f.write(LOG4J_CONN % conn_log)
    cp = kafka_cluster.classpath(client_prefix(), *([classes] if classes else []))
    return ["java", "-Xmx192m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
            "-Dlog4j2.configurationFile=" + cfg, "-cp", cp, main] + list(args), conn_log


def driver(h, c, args, name, timeout=150.0):
    """Runs EgDriver; returns (its JSON result, ports it connected to)."""
    classes = kafka_cluster.compile_java(client_prefix(), [os.path.join(HERE, "EgDriver.java")])
    argv, conn_log = java_argv(h, c, "EgDriver", args, name, classes)
    r = h.run(argv, timeout=timeout, check=False, name=name)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0 or not lines:
        raise AssertionError("%s exited %d: %s" % (name, r.returncode, r.stderr[-3000:]))
    return json.loads(lines[-1]), connected_ports(conn_log)


def connected_ports(conn_log):
    ports = set()
    try:
        with open(conn_log, errors="replace") as f:
            for line in f:
                if "clientId=eg-mover" in line:  # EgDriver's own operator client
                    continue
                m = CONNECT.search(line)
                if m:
                    ports.add(int(m.group(1)))
    except OSError:
        pass
    return ports


def assert_ports(ports, allowed, upstream, what):
    assert ports, "%s: no connection seen in the client's log" % what
    assert ports <= set(allowed), "%s connected to %s outside %s (upstream %s)" % (
        what, sorted(ports - set(allowed)), sorted(allowed), sorted(upstream))


def in_ci():
    return harness.in_ci()
