"""A real Apache Kafka KRaft cluster on loopback, from the jars that
tools/kafka/fetch.sh puts in the cache, for tests and the demo.

Owns: formatting and starting the nodes, readiness, clean (SIGTERM) and
hard (SIGKILL) stops of one broker and its restart, compiling small Java
programs into the cache once (javac), and the long-lived KafkaCtl helper
that moves leaders through the Admin API. It must never bind anything but
127.0.0.1, never leave a JVM behind (stop() kills what start() made, by
pid), and never wait without a deadline.

Topology: one controller-only node (id 0) plus three brokers (ids 1-3).
Three combined nodes would save a JVM, but killing a combined node that is
the active controller adds a quorum election to every failure test; with a
dedicated controller a SIGKILL or bounce of a leader measures exactly the
broker failover Kafka's own replication_test.py measures (it runs the same
isolated-controller layout).

Sizing for a shared 2-core machine: brokers -Xmx384m, controller -Xmx256m,
C1 only (the JIT's C2 compile threads cost more CPU than they save in a
test run), one GC thread, two network and two I/O threads, internal topics
with 3 partitions, no JMX MBeans. Fast fencing of a killed broker: heartbeat
500 ms, session 3 s.

Security (`security=True`): each broker also gets a SASL_PLAINTEXT and a
SASL_SSL listener (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, and OAUTHBEARER
with Kafka's unsecured tokens), with a
certificate from tools/tls/make-certs.sh (the openssl command line) loaded
as a PEM keystore. The PLAINTEXT listener stays for the brokers' own
replication and the operator's helper, so moving leaders never depends on
the security under test. PLAIN users live in the listeners' JAAS config;
SCRAM users are created through the Admin API (alterUserScramCredentials)
before start() returns, once describeUserScramCredentials lists them.

TCP proxy in front (`proxy_listener=True`, off by default so the tests keep
their exact cluster): each broker also gets a plaintext HAPROXY listener
whose advertised port is not the one it binds. A TCP proxy (bench/
real_kafka.py runs HAProxy) listens on the advertised ports and forwards to
the bound ones, so clients that bootstrap through it get Metadata, and the
brokers' own KIP-951 hints, naming the proxy's ports and stay on it. The
brokers only reserve the advertised ports (`proxy_routes`); whoever runs
the proxy binds them.

Used as a module (tests/realkafka) or from the command line:
    /usr/bin/python3 tools/kafka/kafka_cluster.py up --dir DIR
starts a cluster, prints its bootstrap, start time and RSS, and stops it on
SIGTERM/SIGINT or end of stdin.
"""

import hashlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from port_reservation import PortReservation  # noqa: E402
DEFAULT_VERSION = "4.4.0"
LOOPBACK = "127.0.0.1"
BROKERS = (1, 2, 3)
# The security listeners' users: a client principal and epochgate's own
# (upstream_sasl). Each can log in with PLAIN, SCRAM-SHA-256 and -512.
SASL_USERS = {"alice": "alice-secret", "epochgate": "epochgate-secret"}
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# OAUTHBEARER with Kafka's unsecured tokens (a JWS with "alg": "none"; the
# brokers check its expiry and take the principal from "sub"): the
# mechanism's framing and lifetime without an identity provider.
OAUTHBEARER_VALIDATOR = ("org.apache.kafka.common.security.oauthbearer.internals.unsecured."
                         "OAuthBearerUnsecuredValidatorCallbackHandler")
CONTROLLER = 0
READY_TIMEOUT = 90.0


def cache_root():
    return os.environ.get("EPOCHGATE_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "epochgate"))


def fetch(version=DEFAULT_VERSION):
    """Cache directory of `version` (fetched with Maven on first use)."""
    out = subprocess.run([os.path.join(HERE, "fetch.sh"), version], stdout=subprocess.PIPE,
                         timeout=900, check=True)
    return out.stdout.decode().strip().splitlines()[-1]


def classpath(prefix, *extra):
    return os.pathsep.join([os.path.join(prefix, "lib", "*")] + list(extra))


def compile_java(prefix, sources):
    """Compiles `sources` against the cached Kafka jars once; returns the
    classes directory (in the cache, named by a hash of the sources, so an
    edited source compiles again and an unchanged one never does)."""
    h = hashlib.sha256()
    for s in sorted(sources):
        with open(s, "rb") as f:
            h.update(os.path.basename(s).encode() + b"\0" + f.read())
    out = os.path.join(prefix, "classes", h.hexdigest()[:16])
    if os.path.exists(os.path.join(out, ".complete")):
        return out
    tmp = out + ".tmp%d" % os.getpid()
    os.makedirs(tmp, exist_ok=True)
    r = subprocess.run(["javac", "-nowarn", "-d", tmp, "-cp", classpath(prefix)] + list(sources),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("javac failed: %s" % r.stdout.decode(errors="replace")[-3000:])
    open(os.path.join(tmp, ".complete"), "w").close()
    try:
        os.rename(tmp, out)
    except OSError:  # another process finished the same compile first
        subprocess.run(["rm", "-rf", tmp])
    return out


def free_ports(n):
    """`n` loopback ports reserved for servers that bind them later (a
    port_reservation.PortReservation: `.ports`, `.release()`)."""
    return PortReservation(n, LOOPBACK)


def log_option(prefix, tools=False):
    """The JVM option naming the logging config: log4j2 for 4.x, log4j 1
    (reload4j) for 3.x, whose jars fetch.sh put in the cache."""
    import glob
    if glob.glob(os.path.join(prefix, "lib", "reload4j-*.jar")):
        return "-Dlog4j.configuration=file:" + os.path.join(
            prefix, "conf", "tools-log4j.properties" if tools else "log4j.properties")
    # EPOCHGATE_BROKER_LOG_CONFIG: the brokers' log4j2 config instead of the
    # cached one (e.g. their replica fetchers' fetch sessions at DEBUG, to
    # see when a follower first fetches a moved partition).
    if not tools and os.environ.get("EPOCHGATE_BROKER_LOG_CONFIG"):
        return "-Dlog4j2.configurationFile=" + os.environ["EPOCHGATE_BROKER_LOG_CONFIG"]
    return "-Dlog4j2.configurationFile=" + os.path.join(
        prefix, "conf", "tools-log4j2.properties" if tools else "log4j2.properties")


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def random_cluster_id():
    """What `StorageTool random-uuid` prints (16 random bytes, URL-safe
    base64 without padding, never starting with '-'), without a JVM start."""
    import base64
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


JVM_COMMON = ["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:ParallelGCThreads=1",
              "-XX:ConcGCThreads=1", "-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1",
              "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true"]


class Node:
    def __init__(self, cluster, node_id):
        self.cluster = cluster
        self.id = node_id
        self.proc = None
        self.log_path = os.path.join(cluster.dir, "node%d.log" % node_id)
        self.conf_path = os.path.join(cluster.dir, "node%d.properties" % node_id)
        self.data = os.path.join(cluster.dir, "data%d" % node_id)
        self.port = cluster.ports[node_id] if node_id != CONTROLLER else cluster.controller_port
        self._log_offset = 0

    def start(self):
        heap = self.cluster.controller_heap if self.id == CONTROLLER else self.cluster.broker_heap
        with open(self.log_path, "ab") as log:
            self._log_offset = log.tell()
            self.proc = subprocess.Popen(
                ["java", "-Xms" + heap, "-Xmx" + heap] + JVM_COMMON +
                [log_option(self.cluster.prefix),
                 "-cp", classpath(self.cluster.prefix), "kafka.Kafka", self.conf_path],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def started(self):
        """True once this run of the node logged Kafka's own start line."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_offset)
                return b"Kafka Server started" in f.read()
        except OSError:
            return False

    def wait_started(self, timeout=READY_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.started():
                return
            if not self.alive():
                raise RuntimeError("kafka node %d exited (rc=%s): %s" % (self.id, self.proc.poll(), self.tail()))
            time.sleep(0.2)
        raise RuntimeError("kafka node %d not started within %.0fs: %s" % (self.id, timeout, self.tail()))

    def stop(self, hard=False, timeout=30.0):
        """SIGTERM (controlled shutdown) or SIGKILL; waits for the exit.
        Returns the seconds the process took to exit."""
        if not self.alive():
            return 0.0
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        return time.monotonic() - t0

    def tail(self, n=30):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


class KafkaCtl:
    """The long-lived Admin helper (tools/kafka/KafkaCtl.java)."""

    def __init__(self, cluster):
        classes = compile_java(cluster.prefix, [os.path.join(HERE, "KafkaCtl.java")])
        self.log = open(os.path.join(cluster.dir, "kafkactl.log"), "ab")
        self.proc = subprocess.Popen(
            ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
             log_option(cluster.prefix, tools=True),
             "-cp", classpath(cluster.prefix, classes), "KafkaCtl", cluster.bootstrap],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, start_new_session=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.lock = threading.Lock()
        first = self._get(60)
        if not first.get("ready"):
            raise RuntimeError("KafkaCtl did not start: %s" % first)

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.put(raw.decode(errors="replace"))
        self.lines.put(None)

    def _get(self, timeout):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError("KafkaCtl gave no answer within %.0fs" % timeout)
        if line is None:
            raise RuntimeError("KafkaCtl exited (rc=%s)" % self.proc.poll())
        return json.loads(line)

    def __call__(self, command, timeout=90.0, check=True):
        with self.lock:
            self.proc.stdin.write((command + "\n").encode())
            self.proc.stdin.flush()
            reply = self._get(timeout)
        if check and not reply.get("ok"):
            raise RuntimeError("KafkaCtl %r -> %s" % (command, reply))
        return reply

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()


class KafkaCluster:
    """1 controller + 3 brokers, formatted fresh in `directory`."""

    def __init__(self, directory, version=DEFAULT_VERSION, broker_heap="384m", controller_heap="256m",
                 extra_config=None, security=False, proxy_listener=False):
        self.dir = os.path.abspath(directory)
        self.version = version
        self.broker_heap = broker_heap
        self.controller_heap = controller_heap
        self.extra_config = dict(extra_config or {})
        self.prefix = None
        self.nodes = {}
        self.ctl = None
        self.start_seconds = None
        self.security = security
        self.tls_dir = os.path.join(self.dir, "tls") if security else None
        self.proxy_listener = proxy_listener
        self.proxy_ports = {}  # broker -> (bound, advertised), proxy_listener=True
        self.reservation = None  # the ports above, locked until stop()

    # -- addresses
    @property
    def bootstrap(self):
        return ",".join("%s:%d" % (LOOPBACK, self.ports[b]) for b in BROKERS)

    def broker_address(self, broker_id):
        return (LOOPBACK, self.ports[broker_id])

    def listener_bootstrap(self, protocol):
        """Bootstrap of the SASL_PLAINTEXT or SASL_SSL listeners (security=True)."""
        ports = self.sasl_ports[protocol]
        return ",".join("%s:%d" % (LOOPBACK, ports[b]) for b in BROKERS)

    def proxy_routes(self):
        """(advertised port, bound port) of each broker's HAPROXY listener,
        in broker order (proxy_listener=True): the proxy listens on the
        first and forwards to the second."""
        return [(self.proxy_ports[b][1], self.proxy_ports[b][0]) for b in BROKERS]

    def listener_ports(self, protocol):
        return [self.sasl_ports[protocol][b] for b in BROKERS]

    @property
    def ca_file(self):
        """The CA that signed the brokers' certificate (security=True)."""
        return os.path.join(self.tls_dir, "ca.crt")

    def _security_props(self, node_id):
        """Listener, keystore and JAAS properties of broker `node_id`."""
        plain_users = " ".join('user_%s="%s"' % (u, p) for u, p in SASL_USERS.items())
        listeners = ["PLAINTEXT://%s:%d" % (LOOPBACK, self.ports[node_id])]
        for proto in ("SASL_PLAINTEXT", "SASL_SSL"):
            listeners.append("%s://%s:%d" % (proto, LOOPBACK, self.sasl_ports[proto][node_id]))
        props = {
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(listeners),
            "listener.security.protocol.map":
                "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS + ("OAUTHBEARER",)),
            # A PEM keystore (KIP-651): the leaf chain and its unencrypted
            # PKCS#8 key in one file, as make-certs.sh writes it.
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": os.path.join(self.tls_dir, "server.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": self.ca_file,
        }
        for proto in ("sasl_plaintext", "sasl_ssl"):
            props["listener.name.%s.plain.sasl.jaas.config" % proto] = (
                "org.apache.kafka.common.security.plain.PlainLoginModule required %s;" % plain_users)
            for mech in ("scram-sha-256", "scram-sha-512"):
                props["listener.name.%s.%s.sasl.jaas.config" % (proto, mech)] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;")
            props["listener.name.%s.oauthbearer.sasl.jaas.config" % proto] = (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;")
            props["listener.name.%s.oauthbearer.sasl.server.callback.handler.class" % proto] = (
                OAUTHBEARER_VALIDATOR)
        return props

    def _create_scram_users(self, timeout=READY_TIMEOUT):
        """Creates every SASL user for both SCRAM mechanisms through the Admin
        API, then waits until describeUserScramCredentials lists
        them."""
        for user, password in SASL_USERS.items():
            for mech in SASL_MECHANISMS[1:]:
                self.ctl("scram %s %s %s" % (mech, user, password))
        deadline = time.monotonic() + timeout
        for user in SASL_USERS:
            while True:
                r = self.ctl("scram-describe %s" % user, check=False)
                if r.get("ok") and set(r.get("mechanisms", [])) >= set(SASL_MECHANISMS[1:]):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("SCRAM users not visible within %.0fs: %s" % (timeout, r))
                time.sleep(0.1)

    @property
    def broker_ports(self):
        return [self.ports[b] for b in BROKERS]

    def _write_configs(self):
        voters = "%d@%s:%d" % (CONTROLLER, LOOPBACK, self.controller_port)
        common = {
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "num.network.threads": 2, "num.io.threads": 2, "background.threads": 2,
            "num.recovery.threads.per.data.dir": 1,
            "metrics.jmx.exclude": ".*",
            # Fast fencing of a killed broker. The session timeout is the
            # controller's setting: set on the brokers alone it changes
            # nothing (a SIGKILL then took the default 9 s to fence).
            "broker.heartbeat.interval.ms": 500, "broker.session.timeout.ms": 3000,
        }
        broker = {
            "process.roles": "broker",
            "inter.broker.listener.name": "PLAINTEXT",
            "auto.create.topics.enable": "false",
            # Leaders move only when a test moves them (the default moves
            # them back every 300 s).
            "auto.leader.rebalance.enable": "false",
            "default.replication.factor": 3,
            "offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 3,
            "transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 2,
            "transaction.state.log.num.partitions": 3,
            "share.coordinator.state.topic.replication.factor": 3,
            "share.coordinator.state.topic.min.isr": 2,
            "share.coordinator.state.topic.num.partitions": 3,
            "group.initial.rebalance.delay.ms": 0,
            "num.replica.fetchers": 1, "log.cleaner.threads": 1,
            "log.segment.bytes": 16777216,
            "replica.lag.time.max.ms": 10000,
        }
        broker.update(self.extra_config)
        for node_id in (CONTROLLER,) + BROKERS:
            props = dict(common)
            props["node.id"] = node_id
            props["log.dirs"] = os.path.join(self.dir, "data%d" % node_id)
            if node_id == CONTROLLER:
                props["process.roles"] = "controller"
                props["listeners"] = "CONTROLLER://%s:%d" % (LOOPBACK, self.controller_port)
            else:
                props.update(broker)
                addr = "PLAINTEXT://%s:%d" % (LOOPBACK, self.ports[node_id])
                props["listeners"] = addr
                props["advertised.listeners"] = addr
                if self.security:
                    props.update(self._security_props(node_id))
                if self.proxy_listener:
                    # Appended after the security listeners (which replace
                    # both lists), so the two options combine.
                    bound, adv = self.proxy_ports[node_id]
                    props["listeners"] += ",HAPROXY://%s:%d" % (LOOPBACK, bound)
                    props["advertised.listeners"] += ",HAPROXY://%s:%d" % (LOOPBACK, adv)
                    props["listener.security.protocol.map"] += ",HAPROXY:PLAINTEXT"
            with open(os.path.join(self.dir, "node%d.properties" % node_id), "w") as f:
                for k, v in props.items():
                    f.write("%s=%s\n" % (k, v))

    def _tool(self, args, timeout=120):
        r = subprocess.run(["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                            log_option(self.prefix, tools=True),
                            "-cp", classpath(self.prefix)] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(args[:2]), r.stderr.decode(errors="replace")[-2000:]))
        return r.stdout.decode()

    def start(self):
        """Formats every node fresh and starts the cluster; returns when all
        three brokers are registered and the helper answers."""
        t0 = time.monotonic()
        self.prefix = fetch(self.version)
        subprocess.run(["rm", "-rf", self.dir])
        os.makedirs(self.dir)
        base = 10 if self.security else 4
        # One call for every port, so none is handed out twice.
        if self.reservation is not None:
            self.reservation.release()
        self.reservation = free_ports(base + (6 if self.proxy_listener else 0))
        ports = self.reservation.ports
        self.controller_port = ports[0]
        self.ports = {b: ports[b] for b in BROKERS}
        if self.security:
            self.sasl_ports = {"SASL_PLAINTEXT": {b: ports[3 + b] for b in BROKERS},
                               "SASL_SSL": {b: ports[6 + b] for b in BROKERS}}
            subprocess.run([os.path.join(HERE, "..", "tls", "make-certs.sh"), "set", self.tls_dir],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120, check=True)
        if self.proxy_listener:
            self.proxy_ports = {b: (ports[base + b - 1], ports[base + 2 + b]) for b in BROKERS}
        self._write_configs()
        self.nodes = {n: Node(self, n) for n in (CONTROLLER,) + BROKERS}
        # One JVM formats all four directories would need a new tool; the
        # storage tool takes one config, so it runs once per node, in parallel.
        cluster_id = random_cluster_id()
        fmt = [subprocess.Popen(
            ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
             log_option(self.prefix, tools=True),
             "-cp", classpath(self.prefix), "kafka.tools.StorageTool", "format",
             "-t", cluster_id, "-c", node.conf_path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for node in self.nodes.values()]
        for p in fmt:
            out, _ = p.communicate(timeout=120)
            if p.returncode != 0:
                raise RuntimeError("format failed: %s" % out.decode(errors="replace")[-2000:])
        self.format_seconds = time.monotonic() - t0
        try:
            for node in self.nodes.values():
                node.start()
            for node in self.nodes.values():
                node.wait_started()
            self.ctl = KafkaCtl(self)
            self.wait_brokers(set(BROKERS))
            if self.security:
                self._create_scram_users()
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def wait_brokers(self, wanted, timeout=READY_TIMEOUT):
        """Waits until describeCluster lists exactly `wanted` brokers."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.ctl("cluster", check=False)
            if last.get("ok") and set(last["nodes"]) == set(wanted):
                return last
            time.sleep(0.2)
        raise RuntimeError("brokers %s not registered within %.0fs (last %s)" % (sorted(wanted), timeout, last))

    def stop_broker(self, broker_id, hard=False):
        return self.nodes[broker_id].stop(hard=hard)

    def start_broker(self, broker_id, wait=True):
        node = self.nodes[broker_id]
        node.start()
        if wait:
            node.wait_started()
            alive = {b for b in BROKERS if self.nodes[b].alive()}
            self.wait_brokers(alive)

    def wait_isr(self, topic, replicas=3, timeout=READY_TIMEOUT):
        """Waits until every partition of `topic` has `replicas` in sync."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            parts = self.ctl("describe " + topic)["partitions"]
            if all(len(p["isr"]) >= replicas for p in parts):
                return parts
            time.sleep(0.2)
        raise RuntimeError("ISR of %s not full within %.0fs: %s" % (topic, timeout, parts))

    def rss_mib(self):
        """Resident memory of the running JVMs, MiB by node id."""
        return {n: rss_kib(node.proc.pid) / 1024.0 for n, node in self.nodes.items() if node.alive()}

    def stop(self):
        if self.ctl is not None:
            try:
                self.ctl.close()
            except Exception:
                pass
            self.ctl = None
        # Brokers before the controller: a broker without its controller
        # waits out its controlled-shutdown timeout.
        for n in BROKERS + (CONTROLLER,):
            node = self.nodes.get(n)
            if node is not None:
                node.stop(hard=False, timeout=20)
        if self.reservation is not None:
            self.reservation.release()
            self.reservation = None


def _main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="a 1-controller + 3-broker KRaft cluster on loopback")
    ap.add_argument("command", choices=["up", "fetch"])
    ap.add_argument("--dir", default=os.path.join(cache_root(), "run", "kafka-cluster"))
    ap.add_argument("--version", default=DEFAULT_VERSION)
    ap.add_argument("--security", action="store_true",
                    help="also SASL_PLAINTEXT and SASL_SSL listeners (PLAIN, SCRAM-SHA-256/512)")
    ap.add_argument("--proxy-listener", action="store_true",
                    help="also a HAPROXY listener per broker advertising a port for a TCP proxy to bind")
    o = ap.parse_args(argv)
    if o.command == "fetch":
        print(fetch(o.version))
        return 0
    c = KafkaCluster(o.dir, version=o.version, security=o.security, proxy_listener=o.proxy_listener)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    c.start()
    try:
        time.sleep(2)
        rss = c.rss_mib()
        extra = {}
        if c.security:
            extra = {"sasl_plaintext_bootstrap": c.listener_bootstrap("SASL_PLAINTEXT"),
                     "sasl_ssl_bootstrap": c.listener_bootstrap("SASL_SSL"), "ca_file": c.ca_file,
                     "users": SASL_USERS}
        if c.proxy_listener:
            extra["proxy_routes"] = c.proxy_routes()
        print(json.dumps(dict({"bootstrap": c.bootstrap, "dir": c.dir, "start_seconds": round(c.start_seconds, 1),
                          "format_seconds": round(c.format_seconds, 1),
                          "rss_mib": {str(k): round(v) for k, v in rss.items()},
                          "rss_total_mib": round(sum(rss.values()))}, **extra)), flush=True)
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
        stop.wait()
    finally:
        c.stop()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
