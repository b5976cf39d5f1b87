"""Shared pieces of the fencing scenarios: epochgate's metrics and
view as a user reads them (/metrics, /debug/metadata), epochgate started
from a YAML file, raw connections through epochgate, and what a librdkafka
debug log says about leader hints.

Owns: reading Prometheus text and the view JSON, waiting (bounded) for the
view to reach a state, and the per-scenario helpers that several files use.
It reuses tests/lib/epochgate_testlib/harness.py and kafka_wire.py (imported, never
copied) and must never look at epochgate's log text to decide a verdict.
"""

import hashlib
import json
import os
import re
import socket
import time

from . import test_area

# The scenario tests' folder (steady_python_producer.py).
HERE = test_area("scenario")
from . import harness  # noqa: E402,F401  (re-exported for the scenario files)
from . import kafka_wire as kw  # noqa: E402
from . import prom_text  # noqa: E402
from . import scenario_wire as sw  # noqa: E402

# ------------------------------------------------------------------ metrics

class Metrics:
    """One scrape of /metrics: samples by name and labels."""

    def __init__(self, text):
        self.samples = prom_text.samples(text)

    def sum(self, name, **labels):
        """Sum of every sample of `name` whose labels include `labels`."""
        return sum(v for n, l, v in self.samples
                   if n == name and all(l.get(k) == str(x) for k, x in labels.items()))

    def by(self, name, label):
        """{label value: summed value} of `name`."""
        out = {}
        for n, l, v in self.samples:
            if n == name:
                out[l.get(label, "")] = out.get(l.get(label, ""), 0) + v
        return out

    def rows(self, name):
        return [(l, v) for n, l, v in self.samples if n == name and v]


def scrape(gate):
    return Metrics(gate.metrics())


def delta(after, before, name, **labels):
    return after.sum(name, **labels) - before.sum(name, **labels)


FENCED = "epochgate_fenced_partitions_total"
HINTS = "epochgate_hints_total"
INJECTED = "epochgate_epochs_injected_total"
REFRESHES = "epochgate_metadata_refreshes_total"
DOWNGRADES = "epochgate_version_downgrades_total"


def fences_text(m):
    """Short text of the non-zero fence and hint counters, for notes."""
    fences = ", ".join("%s/%s/%s=%d" % (l.get("api"), l.get("reason"), l.get("mode"), v)
                       for l, v in m.rows(FENCED))
    hints = ", ".join("%s=%d" % (l.get("source"), v) for l, v in m.rows(HINTS))
    return "fenced[%s] hints[%s]" % (fences or "none", hints or "none")


# --------------------------------------------------------------------- view

def view(gate):
    """/debug/metadata as a dict."""
    status, body = gate.http_get("/debug/metadata")
    if status != 200:
        raise AssertionError("/debug/metadata answered %d" % status)
    return json.loads(body)


def view_partition(gate, topic, partition):
    """The view's entry {leader, epoch, ...} of one partition, or None."""
    for t in view(gate)["topics"]:
        if t["name"] == topic:
            for p in t["partitions"]:
                if p["partition"] == partition:
                    p = dict(p)
                    p["topic_id"] = t["topic_id"]
                    return p
    return None


def wait_view(gate, topic, partition, leader, epoch, timeout=5.0):
    """Waits until the view names `leader` at `epoch` for the partition."""
    def ok():
        p = view_partition(gate, topic, partition)
        return p if p and p["leader"] == leader and p["epoch"] == epoch else None
    try:
        return harness.wait_until(ok, timeout, interval=0.02,
                                  what="view %s[%d] = leader %d epoch %d" % (
                                      topic, partition, leader, epoch))
    except AssertionError:
        raise AssertionError("view %s[%d] is %s, wanted leader %d epoch %d" % (
            topic, partition, view_partition(gate, topic, partition), leader, epoch))


# ---------------------------------------------------------------- epochgate

def write_config(h, text, name="epochgate.yaml"):
    path = os.path.join(h.workdir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def start_gate(h, cluster, config=None, upstream=None, args=()):
    """epochgate in front of `cluster` (or `upstream`), optionally with a YAML
    config file body. Returns the harness Epochgate."""
    extra = list(args)
    if config is not None:
        extra += ["--config", write_config(h, config)]
    return h.start_gate(upstream or cluster.bootstrap, extra)


def connect(address, timeout=10.0, tls=None):
    host, port = address if isinstance(address, tuple) else harness.parse_hostport(address)
    return kw.Connection(host, port, timeout=timeout, tls=tls)


class GateClient:
    """Raw connections through epochgate: the bootstrap one, and one per node
    listener as a client finds them in Metadata through epochgate."""

    def __init__(self, h, gate, tls=None):
        self.h = h
        self.gate = gate
        self.tls = tls  # ssl.SSLContext when epochgate's listeners speak TLS
        self.conns = {}
        self.brokers = {}
        self.corr = 1000

    def next_corr(self):
        self.corr += 1
        return self.corr

    def conn(self, node=None):
        """Connection to the bootstrap listener (node None) or to the listener
        epochgate advertises for `node`."""
        if node not in self.conns:
            if node is None:
                c = connect(self.gate.bootstrap_address, tls=self.tls)
            else:
                if node not in self.brokers:
                    self.metadata([])
                host, port = self.brokers[node]
                c = connect((host, port), tls=self.tls)
            self.h.on_close(c.close)
            self.conns[node] = c
        return self.conns[node]

    def ready_conn(self, node=None):
        """conn(node) once epochgate has answered an ApiVersions on it: its
        session has dialled and probed the broker, so a test that slows the
        broker afterwards (the mock's rtt) slows only the requests it sends."""
        c = self.conn(node)
        c.send(kw.api_versions_request(self.next_corr()))
        c.recv_frame(timeout=10.0)
        return c

    def exchange(self, frame, node=None, timeout=10.0):
        c = self.conn(node)
        c.send(frame)
        return c.recv_frame(timeout=timeout)

    def metadata(self, topics, node=None):
        """Metadata v7 through epochgate (the view learns from its answer)."""
        md = kw.parse_metadata_response(
            self.exchange(kw.metadata_request(self.next_corr(), list(topics), version=7), node), 7)
        self.brokers = {b: (host, port) for b, (host, port, _) in md["brokers"].items()}
        return md

    def metadata_v12(self, topics, node=None):
        md = sw.parse_metadata_response_v12(
            self.exchange(sw.metadata_request_v12(self.next_corr(), list(topics)), node))
        self.brokers = dict(md["brokers"])
        return md

    def node_of_port(self, port):
        for node, (_, p) in self.brokers.items():
            if p == port:
                return node
        return None


def other_broker(leader, brokers=3):
    return 1 + leader % brokers


def produce_values(gate_client, node, topic, partition, values, acks=-1, version=10):
    """One Produce through epochgate's listener of `node`; returns the parsed response."""
    frame = sw.produce_request(gate_client.next_corr(), topic,
                               [(partition, kw.record_batch(values))], acks, version)
    return sw.parse_produce_response(gate_client.exchange(frame, node), version)


def direct_and_through(h, direct_address, gate, gate_conn, frame, tls=None, timeout=30):
    """One request frame answered by the broker at `direct_address` (a fresh
    connection, not through epochgate) and by epochgate over `gate_conn`.
    Returns (direct answer, epochgate's answer, metrics before, metrics after)."""
    direct = connect(direct_address, timeout=timeout, tls=tls)
    h.on_close(direct.close)
    direct.send(frame)
    want = direct.recv_frame(timeout=timeout)
    before = scrape(gate)
    gate_conn.send(frame)
    got = gate_conn.recv_frame(timeout=timeout)
    return want, got, before, scrape(gate)


def kcat_rows(h, bootstrap, topic, count, extra=(), timeout=150):
    """`count` records read with kcat (librdkafka) from the beginning of every
    partition of `topic`: sorted (partition, offset, sha256 of the value);
    values must be printable (one per line)."""
    out = h.kcat(["-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
                  "-c", str(count), "-f", "%p %o %S %s\n"] + list(extra), timeout=timeout)
    rows = []
    for line in out.stdout.splitlines():
        if not line:
            continue
        p, o, n, v = line.split(" ", 3)
        assert int(n) == len(v), (p, o, n, len(v))
        rows.append((int(p), int(o), hashlib.sha256(v.encode()).hexdigest()))
    return sorted(rows)


def read_partition(h, cluster, topic, partition, start=0, count=None, timeout=15.0):
    """Values of one partition, read with kcat straight from the cluster (not
    through epochgate), from offset `start` to the end."""
    args = ["-b", cluster.bootstrap, "-C", "-t", topic, "-p", str(partition), "-o", str(start),
            "-e", "-f", "%s\\n", "-X", "check.crcs=true", "-q"]
    if count is not None:
        args += ["-c", str(count)]
    out = h.kcat(args, timeout=timeout).stdout
    return [line for line in out.split("\n") if line]


def end_offset(cluster, topic, partition):
    """Latest offset of a partition, asked of its leader directly."""
    leader = cluster.partition(topic, partition)["leader"]
    c = connect(cluster.broker_address(leader), timeout=5)
    try:
        c.send(kw.list_offsets_request(7, topic, [partition], -1))
        _, offs = kw.parse_list_offsets_response(c.recv_frame())
    finally:
        c.close()
    offset, error = offs[(topic, partition)]
    if error:
        raise AssertionError("ListOffsets %s[%d] error %d" % (topic, partition, error))
    return offset


def port_closed_by_peer(conn, timeout):
    """True if the peer closed `conn` within `timeout` s without sending a
    single byte; False if bytes arrived; raises on timeout."""
    conn.sock.settimeout(timeout)
    try:
        data = conn.sock.recv(1 << 16)
    except socket.timeout:
        raise AssertionError("connection still open after %.1fs" % timeout)
    except ConnectionResetError:
        return True
    return data == b""


# ------------------------------------------------------ librdkafka debug log

def hint_updates(log_path, topic, partition):
    """librdkafka's METADATAUPDATE lines for one partition: the leader
    discovery path (KIP-951 hints in Produce/Fetch responses), not a full
    metadata refresh. Returns [(leader, epoch)] in log order."""
    out = []
    pat = re.compile(r"METADATAUPDATE.*Partition %s\([^)]*\)\[%d\]: updated with leader (-?\d+) "
                     r"and epoch (-?\d+)" % (re.escape(topic), partition))
    with open(log_path, errors="replace") as f:
        for line in f:
            m = pat.search(line)
            if m:
                out.append((int(m.group(1)), int(m.group(2))))
    return out


def wait_metadata_quiet(log_path, quiet_s=0.5, timeout=15.0):
    """Waits until the librdkafka clients logging to `log_path` (metadata
    debug) have no Metadata request out and sent none for `quiet_s` (by the
    log's own wall-clock times). A client reacting to a leader move asks
    for the partition's leader (a fast leader query) right after the move's
    first NOT_LEADER_OR_FOLLOWER, which can come after the new leader has
    already taken records; a move staged by move_view_first in that moment
    loses its pushed Metadata answer to that query, so the client learns
    the move from its own Metadata and never meets epochgate's view."""
    def quiet():
        sent = answered = 0
        last = 0.0
        if not os.path.exists(log_path):
            return False
        with open(log_path, errors="replace") as f:
            for line in f:
                if " METADATA: " not in line:
                    continue
                if "Request metadata" in line:
                    sent += 1
                    try:
                        last = max(last, float(line.split(" ", 1)[0]))
                    except ValueError:
                        pass
                elif "Received metadata" in line:
                    answered += 1
        # A request whose connection failed is never answered: after 3 s
        # it no longer counts as out.
        idle = time.time() - last
        return idle >= quiet_s and (answered >= sent or idle >= 3.0)
    harness.wait_until(quiet, timeout, interval=0.05,
                       what="the clients' Metadata requests to be answered and quiet for %.1f s"
                       % quiet_s)


def metadata_requests(log_path):
    """Number of Metadata requests a librdkafka client sent (protocol debug)."""
    n = 0
    with open(log_path, errors="replace") as f:
        for line in f:
            if "Sent MetadataRequest" in line:
                n += 1
    return n


def client_leader_errors(log_path, topic, partition):
    """Produce batches a librdkafka client saw fail with NOT_LEADER_OR_FOLLOWER
    on one partition (msg debug context)."""
    n = 0
    marker = "%s [%d]: MessageSet with" % (topic, partition)
    with open(log_path, errors="replace") as f:
        for line in f:
            if marker in line and "Not leader for partition" in line:
                n += 1
    return n


def log_time_of_hint(log_path, topic, partition, leader, epoch):
    """Wall-clock time (s) of the first METADATAUPDATE line that moved the
    partition to (leader, epoch), from the check tool's timestamped log."""
    pat = "Partition %s(" % topic
    want = "[%d]: updated with leader %d and epoch %d" % (partition, leader, epoch)
    with open(log_path, errors="replace") as f:
        for line in f:
            if "METADATAUPDATE" in line and pat in line and want in line:
                return float(line.split(" ", 1)[0])
    return None


# ------------------------------------------------------------ leader moves

def open_node_connections(gc, topics):
    """Learns epochgate's node listeners and opens one raw connection to
    each, so a later Metadata costs no connection set-up."""
    md = gc.metadata(topics)
    for node in sorted(md["brokers"]):
        gc.conn(node)
    return md


def track_count(cluster, broker, api):
    """Requests of `api` that `broker` received since the mock cluster's
    request tracking was (re)started or cleared (`track start|clear`)."""
    for item in cluster.cmd("track dump").split()[1:]:
        key, _, n = item.partition("=")
        b, _, a = key.partition(":")
        if int(b) == broker and int(a) == api:
            return int(n)
    return 0


def settle_mock(cluster):
    """Returns once the mock cluster has read every byte written to any of
    its brokers before this call: librdkafka's mock serves all brokers from
    one poll thread, so when a request sent now is answered, the bytes that
    were already waiting on the other connections have been read (and
    tracked) too."""
    for address in cluster.addresses:
        c = connect(address, timeout=5)
        try:
            c.send(kw.api_versions_request(0x5E77, 0))
            c.recv_frame(timeout=5)
        finally:
            c.close()


def restart_tracking_now(cluster):
    """Clears the mock's request tracking once everything already sent has
    reached it, so later counts hold only what arrived after this call."""
    settle_mock(cluster)
    cluster.cmd("track clear")


def wait_end_offset_above(cluster, topic, partition, offset, timeout=20.0, what=None):
    """Waits until the partition's leader (asked directly) reports an end
    offset above `offset`: records were written after that point. Returns
    the end offset."""
    def above():
        try:
            e = end_offset(cluster, topic, partition)
        except (AssertionError, OSError, kw.WireError):  # asked mid-move: ask again
            return None
        return e if e > offset else None
    return harness.wait_until(
        above, timeout, interval=0.05,
        what=what or "%s[%d] to grow past offset %d at its leader" % (topic, partition, offset))


def reroute_config(topic, mode="enforce", reroute=True, extra=""):
    """epochgate YAML with one policy rule for `topic` (a name or pattern) in
    `mode` with `reroute` on or off, followed by `extra` (more top-level
    YAML, such as a `reroute:` section)."""
    return ("policy:\n  rules:\n    - topics: \"%s\"\n      mode: %s\n      reroute: %s\n"
            % (topic, mode, "true" if reroute else "false")) + extra


def move_view_first(cluster, gc, topic, partition, new, on_learned=None, check_first=True):
    """Moves a partition's leader to `new` so that epochgate's view knows the
    move before the old leader stops accepting requests, as happens in Kafka
    when the controller's decision reaches a broker's metadata cache (and a
    client's Metadata through epochgate) before the old leader's become-
    follower: the old leader is a zombie for a moment.

    The mock cluster is told to answer the next Metadata for the partition
    with (new, epoch + 1); that Metadata crosses epochgate (through the new
    leader's listener), so the view learns it; then the cluster really moves
    the leader, which bumps the epoch to the same epoch + 1. A client request
    that reaches the old leader's listener after that is met by epochgate's
    view: any request the broker answers was forwarded before, when the old
    leader still led. Returns (moved_us: wall clock µs of the real move,
    new_epoch, old_leader, learned_us: when the view had it). `on_learned`
    (optional) runs after the view has the move and before the real move.

    `check_first=False` moves the cluster right after the answer crossed
    epochgate and checks the view afterwards: the moment the view is ahead
    of the cluster shrinks from an admin round trip to one mock command, as
    short as in a real cluster, where a write epochgate reroutes inside it
    would meet a new leader that does not lead yet."""
    before = cluster.partition(topic, partition)
    old, epoch = before["leader"], before["leader_epoch"] + 1
    if old == new:
        raise AssertionError("partition %s[%d] already led by %d" % (topic, partition, new))
    # A view that learned the topic only from Metadata below v10 has no topic
    # id, and doubts a lower epoch the refresher reports (a recreated topic
    # and a lagging broker look alike without one): an urgent refresh in the
    # moment before the real move would then stop the fencing this setup is
    # for. Let the view learn the id first, as any v10+ client's Metadata or a
    # periodic refresh gives it.
    known = view_partition(gc.gate, topic, partition)
    if known is None or known["topic_id"] is None:
        gc.metadata_v12([topic])
        known = view_partition(gc.gate, topic, partition)
        if known is None or known["topic_id"] is None:
            raise AssertionError("the view has no topic id after Metadata v12: %s" % known)
    # A refresh of epochgate's own (an urgent one after a client's fenced
    # request) can take the pushed answer or roll the view back to what the
    # cluster still says before the move; the cluster has not moved yet, so
    # the setup is repeated (at most 3 times) until the view has the move.
    for attempt in range(3):
        cluster.cmd("push-leader-response %s %d %d %d" % (topic, partition, new, epoch))
        gc.metadata([topic], node=new)
        learned_us = int(time.time() * 1e6)  # the answer crossed epochgate: the view has it
        if not check_first:
            break
        learned = view_partition(gc.gate, topic, partition)
        if learned and (learned["leader"], learned["epoch"]) == (new, epoch):
            break
        if attempt == 2:
            raise AssertionError("view after the pushed Metadata: %s" % learned)
        time.sleep(0.3)
    if on_learned is not None:
        on_learned()
    moved_us = int(time.time() * 1e6)
    cluster.cmd("leader %s %d %d" % (topic, partition, new))
    after = cluster.partition(topic, partition)
    if (after["leader"], after["leader_epoch"]) != (new, epoch):
        raise AssertionError("leader move did not take: %s" % after)
    if not check_first:
        learned = view_partition(gc.gate, topic, partition)
        if not learned or (learned["leader"], learned["epoch"]) != (new, epoch):
            raise AssertionError("view after the pushed Metadata and the move: %s" % learned)
    return moved_us, epoch, old, learned_us


def wait_consumer_fetching(log_path, topic, partition, node, timeout=30.0):
    """Waits until a librdkafka consumer (fetch debug in `log_path`) has
    queued records of the partition fetched from `node`: it has joined its
    group and fetches there. Joining takes a few round trips through
    epochgate, so the time it takes grows with the machine's load (and
    several-fold under ASan). Returns the log's wall-clock time of it."""
    return harness.wait_until(
        lambda: os.path.exists(log_path) and first_fetched_from(log_path, topic, partition,
                                                                node, 0.0),
        timeout, interval=0.05,
        what="the consumer to fetch records of %s[%d] from broker %d" % (topic, partition, node))


def first_fetched_from(log_path, topic, partition, node, since_s):
    """Wall-clock time (s) a librdkafka consumer (fetch debug) first queued
    records of the partition fetched from `node` at or after `since_s`."""
    marker = "on %s [%d] fetch queue" % (topic, partition)
    thread = "/%d]: " % node
    with open(log_path, errors="replace") as f:
        for line in f:
            if marker in line and "Enqueue" in line and thread in line:
                t = float(line.split(" ", 1)[0])
                if t >= since_s:
                    return t
    return None
