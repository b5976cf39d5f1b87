#!/usr/bin/env python3
"""bench/kafka_load/leader_move_clients.py: the leader-move scenario for
several real producers on three paths in one run: direct, through epochgate
enforcing without rerouting, and through epochgate with rerouting on
(`policy.rules[].reroute: true`, docs/rerouting.md).

For each client, path and cluster (librdkafka 2.15.1's mock cluster with its
full Produce range, or capped at Produce v9: no KIP-951 hints), one producer
process sends one message per millisecond to a one-partition topic
(replication 3) while the harness moves the partition's leader `--rounds`
times, every `--interval` seconds. Per move it records the first
acknowledgement of a message sent after the move (move -> ack, ms), and the
same figure at instants half way between moves where nothing moved (the
floor: batching plus the round trip), and the longest delivery latency of
the messages sent within 100 ms of the move (the worst write across it:
the writes in flight or queued at the old leader too), beside the same at
the no-move instants. The run's first message is reported apart: it waits
for the client's start (librdkafka's idempotent producer: its ProducerId,
500 ms when the PID timer rather than a Metadata answer finds the first
broker up), which no move causes. At the end it reads the partition back
directly from the cluster and counts acknowledged messages lost, messages
stored twice, and stored out of the order they were sent; for the epochgate
paths it scrapes /metrics for the rerouting counters (delivered, fell_back by
reason) and for how epochgate learned of each move. Medians and p99 are over
the rounds.

The move: `leader-timed T P B` on tools/epochgate-mockcluster's shell, which
calls librdkafka's rd_kafka_mock_partition_set_leader (synchronous: it returns
once the mock thread applied the move) between two CLOCK_MONOTONIC stamps it
reports. The first stamp is the origin of every figure; only messages handed
to the client after the second count as "sent after the move", so the
uncertainty counts against the result, never for it. (A mock without
`leader-timed` falls back to `leader` stamped around the whole command.)
Nothing tells epochgate: it learns of the move as it would from a real
cluster, from the old leader's NOT_LEADER_OR_FOLLOWER (with a CurrentLeader
hint on the full cluster) or from its own metadata refresh.

Clients (each its own process, default settings unless noted):
  librdkafka 2.15.1 through Debian's python3-confluent-kafka with
  LD_LIBRARY_PATH (the same library the C++ bench links), idempotent,
  transactional (a transaction per 100 messages, committed by the sending
  loop; the read-back reads committed records only) and neither;
  Debian's librdkafka 2.0.2 (python3-confluent-kafka as shipped);
  Debian's kafka-python 2.0.2 (python3-kafka).

  bench/kafka_load/leader_move_clients.py --build build [--rounds 10] \
      [--paths direct,epochgate,"epochgate reroute"] [--results bench/RESULTS.md]

--rtt MS makes every mock broker answer MS late (writes in flight at the old
leader when it steps down); --debug-dir DIR keeps each row's librdkafka
debug log, epochgate's debug log and the per-message stamps.

A build without rerouting refuses the reroute keys; the reroute rows are then
marked skipped, with the reason printed, and the other paths still run.

Times: CLOCK_MONOTONIC, shared by the harness and the producer processes; a
message is stamped just before the client's produce()/send() and an
acknowledgement when the client's callback runs (confluent-kafka: at the next
poll, within about 0.2 ms). Loopback only; every wait is bounded. Bench
tooling, never part of the test suite.
"""

import argparse
import bisect
import math
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import leader_move_consumer as lmc

RDK_2151 = os.path.expanduser("~/.cache/epochgate/librdkafka-2.15.1/lib")
PY = "/usr/bin/python3"

CONFLUENT_PRODUCER = r"""
import json, sys, time
from confluent_kafka import Producer, libversion
bootstrap, conf, seconds, out = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
conf['bootstrap.servers'] = bootstrap
client_errors = []
def on_error(err):
    # Errors outside delivery reports (fatal idempotence errors, all brokers
    # down, ...): the application sees them through error_cb.
    client_errors.append((time.monotonic_ns(), err.name(), bool(err.fatal())))
conf['error_cb'] = on_error
# Transactional rows: a transaction per txn_messages messages, committed
# (blocking) by this loop; the harness's own key, not librdkafka's.
txn_messages = int(conf.pop('txn_messages', 0))
p = Producer(conf)
sent, acks = [], {}
commits = []  # (start_ns, end_ns, error name or '')
def dr(err, msg):
    acks[int(msg.value())] = (time.monotonic_ns(), err is None, err.name() if err else '')
def commit():
    t0 = time.monotonic_ns()
    try:
        p.commit_transaction(30)
        commits.append((t0, time.monotonic_ns(), ''))
    except Exception as e:
        # An abortable failure: the transaction's messages are not stored
        # (the read-back counts them lost if they were acknowledged).
        err = e.args[0] if e.args else None
        name = err.name() if hasattr(err, 'name') else type(e).__name__
        commits.append((t0, time.monotonic_ns(), name))
        client_errors.append((time.monotonic_ns(), 'commit:' + name,
                              bool(hasattr(err, 'fatal') and err.fatal())))
        p.abort_transaction(30)
if txn_messages:
    p.init_transactions(30)
    p.begin_transaction()
start = time.monotonic_ns()
print('ready', libversion()[0], flush=True)
i = 0
end = start + int(seconds * 1e9)
while True:
    now = time.monotonic_ns()
    if now >= end:
        break
    due = start + i * 1_000_000
    if now >= due:
        # Stamped before produce(): a message stamped after the move was
        # handed to the client after the move, so it cannot be in a request
        # built before it.
        sent.append(time.monotonic_ns())
        p.produce('m', value=str(i).encode(), partition=0, on_delivery=dr)
        i += 1
        if txn_messages and i % txn_messages == 0:
            commit()
            p.begin_transaction()
    p.poll(0)
    if time.monotonic_ns() < due:
        time.sleep(0.0002)
if txn_messages:
    commit()
left = p.flush(30)
json.dump({'sent': sent, 'acks': acks, 'unflushed': left, 'client_errors': client_errors,
           'commits': commits}, open(out, 'w'))
"""

KAFKA_PYTHON_PRODUCER = r"""
import json, sys, time
from kafka import KafkaProducer
bootstrap, conf, seconds, out = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
p = KafkaProducer(bootstrap_servers=bootstrap, **conf)
sent, acks = [], {}
def ok(i):
    return lambda md: acks.__setitem__(i, (time.monotonic_ns(), True, ''))
def bad(i):
    return lambda e: acks.__setitem__(i, (time.monotonic_ns(), False, type(e).__name__))
start = time.monotonic_ns()
print('ready kafka-python', flush=True)
i = 0
end = start + int(seconds * 1e9)
while True:
    now = time.monotonic_ns()
    if now >= end:
        break
    due = start + i * 1_000_000
    if now >= due:
        sent.append(time.monotonic_ns())
        f = p.send('m', value=str(i).encode(), partition=0)
        f.add_callback(ok(i))
        f.add_errback(bad(i))
        i += 1
    else:
        time.sleep(0.0002)
p.flush(30)
p.close(10)
json.dump({'sent': sent, 'acks': acks, 'unflushed': 0, 'client_errors': []}, open(out, 'w'))
"""

READ_BACK = r"""
import json, sys
from confluent_kafka import Consumer, TopicPartition
bootstrap, out, topic, partitions = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'readback', 'enable.auto.commit': False,
              'enable.partition.eof': True})
result = {}
for part in range(partitions):
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, part), timeout=10)
    c.assign([TopicPartition(topic, part, lo)])
    values = []
    done = False
    while not done and len(values) < hi - lo:
        batch = c.consume(num_messages=1000, timeout=5)
        if not batch:
            break
        for m in batch:
            if m.error():
                if m.error().code() == -191:  # partition EOF
                    done = True
                continue
            values.append(m.value().decode())
    result[part] = {'values': values, 'high': hi, 'low': lo}
c.close()
json.dump(result, open(out, 'w'))
"""

# label, runner, config, LD_LIBRARY_PATH
CLIENTS = [
    ("librdkafka 2.15.1 idempotent", "confluent", {"enable.idempotence": True}, RDK_2151),
    # A transaction per 100 messages (100 ms at the bench's rate), committed
    # by the sending loop: moves land inside transactions.
    ("librdkafka 2.15.1 transactional", "confluent",
     {"transactional.id": "leader-move-bench", "txn_messages": 100}, RDK_2151),
    ("librdkafka 2.15.1", "confluent", {}, RDK_2151),
    ("librdkafka 2.0.2 (Debian)", "confluent", {}, None),
    ("kafka-python 2.0.2 (Debian)", "kafka-python", {}, None),
]

# The three paths of one run: straight to the mock cluster, through epochgate
# enforcing without rerouting, and through epochgate with rerouting on for the
# bench's topics.
PATHS = ("direct", "epochgate", "epochgate reroute")

# epochgate's configuration per path. The reroute keys are the ones
# docs/rerouting.md names; --reroute-yaml replaces the whole file for builds
# that spell them differently.
EG_CONFIG = {
    "epochgate": 'policy:\n  default_mode: "enforce"\n',
    "epochgate reroute": (
        'policy:\n  default_mode: "enforce"\n'
        '  rules:\n    - topics: "*"\n      mode: "enforce"\n      reroute: true\n'
        'reroute:\n  max_wait_ms: 150\n  max_in_flight: 1024\n'),
}


class RerouteUnsupported(Exception):
    """This epochgate build refused the rerouting configuration."""


class Child:
    """A child process with a line-oriented stdin/stdout, stopped at close()."""

    def __init__(self, argv, env=None, log=None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=log or subprocess.DEVNULL, text=True, env=env)

    def line(self, timeout=20):
        out = []
        t = threading.Thread(target=lambda: out.append(self.p.stdout.readline()), daemon=True)
        t.start()
        t.join(timeout)
        if not out:
            raise RuntimeError(f"no line from {self.p.args[0]} in {timeout} s")
        return out[0].strip()

    def command(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()
        reply = self.line()
        if not reply.startswith("OK"):
            raise RuntimeError(f"{text}: {reply}")
        return reply

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
            except OSError:
                pass
            self.p.terminate()
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(timeout=5)


def percentile(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(q / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


def median_ci(values, level=0.95):
    """A distribution-free confidence interval for the median: the order
    statistics (j, k) around it that cover the true median with at least
    `level` probability (binomial, p = 1/2). None with fewer than 6 values."""
    v = sorted(values)
    n = len(v)
    if n < 6:
        return None
    pmf = [math.comb(n, i) / 2 ** n for i in range(n + 1)]
    for j in range(n // 2, -1, -1):
        # P(j < rank <= n - j) for the 0-based order statistics v[j], v[n-1-j].
        if sum(pmf[j + 1:n - j]) >= level:
            return v[j], v[n - 1 - j]
    return v[0], v[-1]


def start_mock(build, topic_spec):
    """The project's mock cluster (librdkafka's rd_kafka_mock_cluster behind a
    command shell); returns (Child, bootstrap)."""
    mock = Child([os.path.join(build, "tools/epochgate-mockcluster"), "--brokers", "3",
                  "--topic", topic_spec])
    first = mock.line().split()
    if len(first) != 2 or first[0] != "BOOTSTRAP":
        mock.close()
        raise RuntimeError(f"mock cluster: {first}")
    return mock, first[1]


def move_leader(mock, topic, partition, broker):
    """Moves the leader and returns (before_ns, after_ns), an interval that
    contains the moment the mock applied it. `leader-timed` stamps
    CLOCK_MONOTONIC inside the mock right around the synchronous
    rd_kafka_mock_partition_set_leader call; a mock without it falls back to
    `leader` stamped here around the whole command (pipe and scheduling
    included: a wider interval, counted against the result)."""
    before = time.monotonic_ns()
    try:
        words = mock.command(f"leader-timed {topic} {partition} {broker}").split()
        if len(words) == 3:
            return int(words[1]), int(words[2])
    except RuntimeError as e:
        if "unknown command" not in str(e):
            raise
    before = time.monotonic_ns()
    mock.command(f"leader {topic} {partition} {broker}")
    return before, time.monotonic_ns()


def start_epochgate(build, tmp, direct, path, reroute_yaml=None, log_level="warn",
                    config_text=None):
    """epochgate enforcing in front of `direct` (`config_text`: its whole
    config file instead of the path's); returns (Child, bootstrap, admin).
    Raises RerouteUnsupported when the build refuses the rerouting
    configuration (a build without rerouting rejects its keys as unknown)."""
    cfg = os.path.join(tmp, "epochgate.yaml")
    text = config_text or EG_CONFIG[path]
    if path == "epochgate reroute" and reroute_yaml:
        text = open(reroute_yaml).read()
    with open(cfg, "w") as fh:
        fh.write(text)
    log_path = os.path.join(tmp, "epochgate.log")
    eg = Child([os.path.join(build, "proxy/epochgate"), "--bootstrap", direct,
                "--listen", "127.0.0.1:0", "--broker-port-base", "0",
                "--advertise-host", "127.0.0.1", "--admin", "127.0.0.1:0",
                "--config", cfg, "--log-level", log_level, "--ready-file", "-"],
               log=open(log_path, "a"))
    try:
        ready = eg.line()
    except RuntimeError:
        ready = ""
    fields = dict(w.split("=", 1) for w in ready.split() if "=" in w)
    if not ready.startswith("epochgate ready") or "bootstrap" not in fields:
        eg.close()
        log = open(log_path).read().strip().splitlines()
        why = log[0] if log else ready
        if path == "epochgate reroute" and ("reroute" in why or "unknown key" in why):
            raise RerouteUnsupported(why)
        raise RuntimeError(f"epochgate did not start: {why}")
    return eg, fields["bootstrap"], fields.get("admin", "off")


def scrape(admin):
    """epochgate's /metrics as {(name, frozenset(labels)): value}."""
    if not admin or admin == "off":
        return {}
    with urllib.request.urlopen(f"http://{admin}/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)', line)
        if not m:
            continue
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        try:
            out[(m.group(1), labels)] = float(m.group(4))
        except ValueError:
            pass
    return out


def metric_sum(metrics, name, **want):
    return sum(v for (n, labels), v in metrics.items()
               if n == name and all((k, w) in labels for k, w in want.items()))


def reroute_summary(metrics):
    """The rerouting counters a reader needs to see that rerouting happened,
    and how epochgate learned of the moves (the old leader's hint passing
    through, or its own refresh), from one /metrics scrape."""
    if not metrics:
        return {}
    fell = {}
    for (n, labels), v in metrics.items():
        if n == "epochgate_reroutes_total" and ("result", "fell_back") in labels and v:
            reason = dict(labels).get("reason", "")
            fell[reason] = fell.get(reason, 0) + int(v)
    count = metric_sum(metrics, "epochgate_reroute_added_seconds_count")
    total = metric_sum(metrics, "epochgate_reroute_added_seconds_sum")
    return {
        "reroute_metrics": any(n.startswith("epochgate_reroute") for n, _ in metrics),
        "delivered": int(metric_sum(metrics, "epochgate_reroutes_total", result="delivered")),
        "fell_back": fell,
        "added_mean_ms": (total / count * 1e3) if count else None,
        "held": int(metric_sum(metrics, "epochgate_reroute_held_total")),
        "hints_rewritten": int(metric_sum(metrics, "epochgate_hints_total", source="rewritten")),
        "hints_synthesized": int(metric_sum(metrics, "epochgate_hints_total",
                                            source="synthesized")),
        "refresh_urgent": int(metric_sum(metrics, "epochgate_metadata_refreshes_total",
                                         trigger="urgent")),
        "fenced": int(metric_sum(metrics, "epochgate_fenced_partitions_total", api="produce")),
    }


def read_back(direct, tmp, topic, partitions):
    """Reads every partition back straight from the cluster (never through
    epochgate); returns {partition: [value, ...]} in stored order."""
    rb = os.path.join(tmp, "readback.json")
    subprocess.run([PY, "-c", READ_BACK, direct, rb, topic, str(partitions)], timeout=300,
                   check=True, env=dict(os.environ, LD_LIBRARY_PATH=RDK_2151))
    with open(rb) as fh:
        return {int(k): v["values"] for k, v in json.load(fh).items()}


def first_ack_after(instants, sent, acks):
    """For each (origin_ns, threshold_ns): the time from origin to the first
    successful acknowledgement of a message handed to the client at or after
    threshold. threshold is the end of the move command, so the message cannot
    have reached the old leader before the move; origin is its start, so the
    command's own time counts against the result, never for it. Any message
    sent after the instant counts, even one sent after the next move: a client
    slower than the interval shows its real time."""
    # Earliest successful acknowledgement among messages i.. (suffix minimum):
    # `sent` is in send order, so each instant is one binary search.
    inf = float("inf")
    suffix = [inf] * (len(sent) + 1)
    for i in range(len(sent) - 1, -1, -1):
        a = acks.get(i)
        suffix[i] = min(suffix[i + 1], a[0] if a and a[1] else inf)
    out = []
    for origin, threshold in instants:
        best = suffix[bisect.bisect_left(sent, threshold)]
        out.append((best - origin) / 1e6 if best != inf else inf)
    return out


def longest_latency_around(instants, sent, acks, window_ms=100):
    """For each (start_ns, end_ns) instant: the longest delivery latency
    (acknowledgement minus the stamp taken before produce(), ms) among the
    messages sent from `window_ms` before its start to `window_ms` after its
    end: the writes in flight or queued when the leader moved, and those
    sent while the client recovered. A message never acknowledged (or
    failed) counts as infinite. The producer's first messages wait for its
    start (an idempotent producer's PID), which is no part of any move: the
    first move comes --warm seconds later."""
    w = window_ms * 1_000_000
    out = []
    for b, a in instants:
        lo = bisect.bisect_left(sent, b - w)
        hi = bisect.bisect_left(sent, a + w)
        worst = 0.0
        for i in range(lo, hi):
            ack = acks.get(i)
            worst = max(worst, (ack[0] - sent[i]) / 1e6 if ack and ack[1] else float("inf"))
        out.append(worst)
    return out


def commit_summary(commits, moves, window_ms=100):
    """The transactional rows' commits: how many, how many failed, and the
    longest commit_transaction() call that overlapped a move's window
    (`window_ms` either side) beside the longest of the others, ms. None for
    rows without transactions."""
    if not commits:
        return None
    w = window_ms * 1_000_000
    near = lambda c: any(c[0] <= a + w and c[1] >= b - w for b, a in moves)
    across = [(c[1] - c[0]) / 1e6 for c in commits if near(c)]
    quiet = [(c[1] - c[0]) / 1e6 for c in commits if not near(c)]
    return {"count": len(commits), "failed": sum(1 for c in commits if c[2]),
            "longest_across_ms": max(across, default=None),
            "longest_quiet_ms": max(quiet, default=None)}


def longest_latency_spanning(instants, sent, acks, after_ms=100):
    """For each (start_ns, end_ns) instant: the longest delivery latency (ms)
    among the writes the move could hold up: those handed to the client
    before its start and not yet acknowledged at its end (in flight or
    queued at the old leader), and those sent up to `after_ms` after its
    end. Unlike longest_latency_around, a write that finished before the
    move does not count, so the client's jitter before it stays out. A
    message never acknowledged (or failed) counts as infinite."""
    w = after_ms * 1_000_000
    out = []
    for b, a in instants:
        hi = bisect.bisect_left(sent, a + w)
        worst = 0.0
        for i in range(hi):
            ack = acks.get(i)
            done = ack[0] if ack and ack[1] else float("inf")
            if sent[i] < b and done <= a:
                continue
            worst = max(worst, (done - sent[i]) / 1e6)
        out.append(worst)
    return out


def keep_logs(debug_dir, tmp, label, path, capped, moves):
    """--debug-dir: the client's and epochgate's logs of one row, the
    producer's stamps per message, and the moves' CLOCK_MONOTONIC stamps (ns)
    to find them in the logs."""
    os.makedirs(debug_dir, exist_ok=True)
    stem = re.sub(r"[^a-z0-9.]+", "-", f"{label} {path} {'capped' if capped else 'full'}".lower())
    for name in ("client.log", "epochgate.log", "producer.json", "consumer.log",
                 "consumer.json"):
        src = os.path.join(tmp, name)
        if os.path.exists(src):
            with open(src) as fi, open(os.path.join(debug_dir, f"{stem}.{name}"), "w") as fo:
                fo.write(fi.read())
    with open(os.path.join(debug_dir, f"{stem}.moves.json"), "w") as fh:
        json.dump(moves, fh)


def run_case(args, tmp, client, path, capped):
    label, runner, conf, libpath = client
    mock, direct = start_mock(args.build, "m:1:3")
    eg = None
    producer = None
    consumer = None
    metrics = {}
    moves = []
    try:
        if capped:
            mock.command("apiversion 0 0 9")
        leader = 1
        mock.command(f"leader m 0 {leader}")
        if args.rtt:
            # Every broker answers `--rtt` ms late: a write is in flight at
            # the old leader when it steps down.
            for b in (1, 2, 3):
                mock.command(f"rtt {b} {args.rtt}")
        bootstrap = direct
        admin = None
        if path != "direct":
            eg, bootstrap, admin = start_epochgate(args.build, tmp, direct, path,
                                                   args.reroute_yaml,
                                                   "debug" if args.debug_dir else "warn")
        out = os.path.join(tmp, "producer.json")
        seconds = args.warm + args.rounds * args.interval
        env = dict(os.environ)
        if libpath:
            env["LD_LIBRARY_PATH"] = libpath
        script = CONFLUENT_PRODUCER if runner == "confluent" else KAFKA_PYTHON_PRODUCER
        client_log = None
        consumer_out = os.path.join(tmp, "consumer.json")
        if args.consumer:
            # Started first and reading from the beginning: it follows the
            # producer's records across every move.
            _, cpy, cscript, _, rdk = lmc.CLIENTS[args.consumer_client]
            cenv = dict(os.environ, LD_LIBRARY_PATH=RDK_2151) if rdk else dict(os.environ)
            cconf, clog, cextra = dict(args.consumer_conf), subprocess.DEVNULL, []
            if args.debug_dir:
                # What the consumer waits on across a move: the fenced
                # fetch, the leader it takes, its offset validation
                # (kafka-python: its fetcher, metadata and requests).
                if rdk:
                    cconf.setdefault("debug", "fetch,topic,metadata,broker,protocol")
                else:
                    cextra = ["debug"]
                clog = open(os.path.join(tmp, "consumer.log"), "w")
            consumer = subprocess.Popen(
                [cpy, "-c", cscript, bootstrap, json.dumps(cconf), str(seconds + 3),
                 consumer_out] + cextra, stdout=subprocess.PIPE,
                stderr=clog, text=True, env=cenv)
            if not consumer.stdout.readline().startswith("ready"):
                raise RuntimeError("consumer did not start")
        if args.debug_dir:
            # librdkafka's debug contexts for a move: which request carried
            # which sequence, leader changes, idempotence state.
            if runner == "confluent" and args.client_debug:
                conf = dict(conf, debug=args.client_debug)
            client_log = open(os.path.join(tmp, "client.log"), "w")
        producer = subprocess.Popen([PY, "-c", script, bootstrap, json.dumps(conf), str(seconds),
                                     out], stdout=subprocess.PIPE, stderr=client_log, text=True,
                                    env=env)
        if not producer.stdout.readline().startswith("ready"):
            raise RuntimeError("producer did not start")
        t_start = time.monotonic_ns()
        for r in range(args.rounds):
            due = t_start + int((args.warm + r * args.interval) * 1e9)
            while time.monotonic_ns() < due:
                time.sleep(0.001)
            leader = leader % 3 + 1
            moves.append(move_leader(mock, "m", 0, leader))
        producer.wait(timeout=seconds + 90)
        if consumer:
            consumer.wait(timeout=60)
        with open(out) as fh:
            prod = json.load(fh)
        if eg:
            metrics = scrape(admin)
        stored = [int(v) for v in read_back(direct, tmp, "m", 1)[0]]
    finally:
        if producer and producer.poll() is None:
            producer.kill()
        if consumer and consumer.poll() is None:
            consumer.kill()
        if eg:
            eg.close()
        mock.close()
        if args.debug_dir:
            keep_logs(args.debug_dir, tmp, label, path, capped, moves)

    sent = prod["sent"]
    acks = {int(k): v for k, v in prod["acks"].items()}
    consumed = (lmc.summarize(consumer_out, moves, args.interval, stored, acks)
                if args.consumer else None)
    first_ack = first_ack_after(moves, sent, acks)
    longest = longest_latency_around(moves, sent, acks)
    # The same figure half way between moves, where nothing moved: the
    # client's and the machine's own jitter.
    half = int(args.interval * 1e9 / 2)
    longest_control = longest_latency_around([(b + half, b + half) for b, _ in moves], sent, acks)
    spanning = longest_latency_spanning(moves, sent, acks)
    spanning_control = longest_latency_spanning([(b + half, b + half) for b, _ in moves], sent,
                                                acks)
    # The control: the same figure at instants between moves where nothing
    # moved. It is the floor set by the client's batching (librdkafka 2.15.1:
    # linger.ms 5) and the round trip, which no proxy can remove. Where a
    # move lands in the client's linger cycle is chance, so one instant per
    # move would leave the floor's median as uncertain as the move's; the
    # floor is sampled every --floor-step ms in the quiet part of each
    # interval (from 40% to 90% of it: every client has recovered by then).
    step = int(args.floor_step * 1e6)
    quiet = []
    for b, _ in moves:
        t = b + int(args.interval * 1e9 * 0.4)
        while t < b + int(args.interval * 1e9 * 0.9):
            quiet.append((t, t))
            t += step
    control = first_ack_after(quiet, sent, acks)
    ok = {i for i, a in acks.items() if a[1]}
    errors = sum(1 for a in acks.values() if not a[1])
    unacked = len(sent) - len(acks)
    count = {}
    for v in stored:
        count[v] = count.get(v, 0) + 1
    lost = sum(1 for i in ok if i not in count)
    dup = sum(c - 1 for c in count.values() if c > 1)
    ooo, high = 0, -1
    ooo_examples = []  # (message, highest stored before it, its answer to the client)
    for v in stored:
        if v < high:
            ooo += 1
            if len(ooo_examples) < 20:
                a = acks.get(v)
                ooo_examples.append((v, high, "ok" if a and a[1] else (a[2] if a else "none")))
        high = max(high, v)
    return {"client": label, "path": path, "capped": capped, "first_ack_ms": first_ack,
            "commits": commit_summary(prod.get("commits"), moves),
            "longest_ms": longest, "longest_control_ms": longest_control,
            "spanning_ms": spanning, "spanning_control_ms": spanning_control,
            # The first message's latency: the client's start (connections,
            # an idempotent producer's PID), apart from any move.
            "first_message_ms": ((acks[0][0] - sent[0]) / 1e6
                                 if sent and acks.get(0) and acks[0][1] else None),
            "ooo_examples": ooo_examples,
            # Reported to the application as failed, yet stored: a retry by
            # the application would store it twice.
            "stored_despite_error": sum(1 for i, a in acks.items() if not a[1] and i in count),
            "control_ms": control, "move_command_ms": [(a - b) / 1e6 for b, a in moves],
            "sent": len(sent), "errors": errors, "unacked": unacked, "lost": lost,
            "duplicated": dup, "out_of_order": ooo,
            "error_kinds": sorted({a[2] for a in acks.values() if not a[1]}),
            "client_errors": prod.get("client_errors", []),
            "reroute": reroute_summary(metrics), "consumer": consumed}


def reroute_cell(r):
    """The rerouting counters of one row: delivered / fell back by reason."""
    if r.get("skipped"):
        return "skipped"
    rr = r.get("reroute") or {}
    if not rr:
        return ""
    if not rr.get("reroute_metrics"):
        return "no reroute metrics"
    fell = ", ".join(f"{k or '?'} {v}" for k, v in sorted(rr["fell_back"].items()))
    cell = f"{rr['delivered']} / {sum(rr['fell_back'].values())}"
    if fell:
        cell += f" ({fell})"
    if rr.get("added_mean_ms") is not None:
        cell += f"; added mean {rr['added_mean_ms']:.2f} ms"
    return cell


def learned_cell(r):
    """How epochgate learned of the moves: hints it rewrote from the old
    leader's NOT_LEADER_OR_FOLLOWER, urgent refreshes it sent."""
    rr = r.get("reroute") or {}
    if not rr:
        return ""
    return f"{rr['hints_rewritten']} hints, {rr['refresh_urgent']} urgent refreshes"


def block_marks(consumer_client):
    """The (begin, end) markers of the RESULTS.md block this run rewrites:
    the main block, or with a kafka-python --consumer a block of its own,
    so that its rows leave the librdkafka consumer's rows in place."""
    name = ("leader-move-clients" if consumer_client == "librdkafka"
            else f"leader-move-consumer-{consumer_client}")
    return f"<!-- {name}:begin", f"<!-- {name}:end -->\n"


def table(results, command, rounds, interval, load, skipped_note="", floor_step=50,
          consumer_conf=None, consumer_client="librdkafka"):
    bracket = max((max(r["move_command_ms"]) for r in results if r.get("move_command_ms")),
                  default=0.0)
    begin, end = block_marks(consumer_client)
    title = ("## Leader move, first acknowledgement after the move, by client "
             "(direct, epochgate, epochgate rerouting)")
    if consumer_client != "librdkafka":
        title = (f"## Leader move, a {lmc.client_label(results, consumer_client)} consumer "
                 f"across the moves (direct, epochgate, epochgate rerouting)")
    lines = [
        f"{begin} (bench/kafka_load/leader_move_clients.py) -->",
        title,
        "",
        f"Produced by `{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        f"One producer process per row sends one message per millisecond to a one-partition "
        f"topic (replication 3) of librdkafka 2.15.1's mock cluster while the harness moves the "
        f"partition's leader {rounds} times, every {interval:g} s "
        f"(`rd_kafka_mock_partition_set_leader` through tools/mockcluster; epochgate is told "
        f"nothing: it learns of a move from the old leader's NOT_LEADER_OR_FOLLOWER, with a "
        f"CurrentLeader hint on the full cluster, or from its own metadata refresh). "
        f"*first ack* = from the start of the move (CLOCK_MONOTONIC stamped in the mock right "
        f"before its synchronous rd_kafka_mock_partition_set_leader call, `leader-timed`) to "
        f"the first acknowledgement of a message handed to the client after that call "
        f"returned (at most {bracket:.2f} ms later in this run), median and p99 over "
        f"the {rounds} moves (p99 is the worst move with fewer than 100; a recovery slower "
        f"than the interval is measured in full, past the next move), with the median's 95% "
        f"confidence interval (order statistics, no assumption on the distribution): where "
        f"a move falls in the client's 5 ms linger cycle is chance, so a median over 10 moves "
        f"is uncertain by about a millisecond either way. *no-move floor* = the same figure "
        f"at instants every {floor_step:g} ms in the quiet part of each interval (40% to 90% "
        f"after each move), where nothing moved: batching (librdkafka `linger.ms` 5 by "
        f"default) plus the round trip; *added* = first ack median minus that floor, what "
        f"the move itself cost. *longest delivery latency* = per move, the longest time "
        f"from handing a message to the client to its acknowledgement among the messages "
        f"sent from 100 ms before the move to 100 ms after it (a message never "
        f"acknowledged counts as infinite): the worst write an application sees across "
        f"the move, where first ack shows only the next one; in brackets the same at the "
        f"instants half way between moves, where nothing moved (the client's and the "
        f"machine's own jitter). *writes the move could hold up* = the same, among only "
        f"the messages still unacknowledged when the move returned (in flight or queued at "
        f"the old leader) and those sent up to 100 ms after it: a write that finished "
        f"before the move, and the jitter it met, is left out. *first message* = the latency of the run's first message, "
        f"which waits for the client's start (an idempotent librdkafka producer's "
        f"ProducerId: 500 ms when its PID timer, not a Metadata answer, finds the first "
        f"broker up), no part of any move. Lost = acknowledged but not in "
        f"the partition when read back directly; dup = stored more than once; ooo = stored "
        f"after a message sent later; errors = delivery errors reported to the application "
        f"(+ n: error_cb events, fatal marked). reroutes = epochgate_reroutes_total delivered / "
        f"fell_back (by reason) and the mean of epochgate_reroute_added_seconds; learned = "
        f"KIP-951 hints epochgate rewrote and urgent metadata refreshes it sent. Clients at "
        f"default settings (kafka-python 2.0.2 defaults to acks=1 and retries=0). "
        f"Load average at start {load[0]}, at end {load[1]} on {os.cpu_count()} cores shared "
        f"with other work.{skipped_note}",
        "",
        "| cluster | client | path | first ack median ms [95% CI] | first ack p99 ms | "
        "moves acked within 5 ms (no-move instants) | no-move floor median ms | added median ms "
        "| longest delivery latency ms, median / max of moves (no-move instants) "
        "| writes the move could hold up: longest ms, median / max (no-move instants) "
        "| first message ms | sent | errors | "
        "lost | dup | ooo | reroutes delivered / fell back | learned |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        cluster = 'Produce <= v9 (no hints)' if r['capped'] else 'full (KIP-951 hints)'
        if r.get("skipped"):
            lines.append(f"| {cluster} | {r['client']} | {r['path']} | skipped | | | | | | | | "
                         f"| | | | | skipped | |")
            continue
        f = r["first_ack_ms"]
        med = statistics.median(f) if f else float("nan")
        ce = r.get("client_errors") or []
        fatal = sum(1 for e in ce if e[2])
        errs = f"{r['errors']}{' (' + ', '.join(r['error_kinds']) + ')' if r['errors'] else ''}"
        if ce:
            errs += f" + {len(ce)} ({', '.join(sorted({e[1] for e in ce}))}"
            errs += f"; {fatal} fatal)" if fatal else ")"
        ci = median_ci(f)
        ci_txt = f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else ""
        floor = statistics.median(r['control_ms'])
        within = sum(1 for x in f if x <= 5.0)
        floor_within = sum(1 for x in r['control_ms'] if x <= 5.0) / max(1, len(r['control_ms']))
        lines.append(
            f"| {cluster} | {r['client']} | {r['path']} | {med:.1f}{ci_txt} | "
            f"{percentile(f, 99):.1f} | {within} of {len(f)} ({floor_within:.0%}) | {floor:.1f} | "
            f"{med - floor:+.1f} | "
            f"{statistics.median(r['longest_ms']):.1f} / {max(r['longest_ms']):.1f} "
            f"({statistics.median(r['longest_control_ms']):.1f} / "
            f"{max(r['longest_control_ms']):.1f}) | "
            f"{statistics.median(r['spanning_ms']):.1f} / {max(r['spanning_ms']):.1f} "
            f"({statistics.median(r['spanning_control_ms']):.1f} / "
            f"{max(r['spanning_control_ms']):.1f}) | "
            f"{fm if (fm := r.get('first_message_ms')) is None else round(fm, 1)} | "
            f"{r['sent']} | {errs} | {r['lost']} | {r['duplicated']} | {r['out_of_order']} | "
            f"{reroute_cell(r)} | {learned_cell(r)} |")
    txn = [r for r in results if not r.get("skipped") and r.get("commits")]
    if txn:
        lines += ["", "Transactional rows (a transaction per 100 messages, committed by the "
                  "sending loop): commit_transaction() calls, failed, and the longest one that "
                  "overlapped a move's window (100 ms either side) beside the longest other, ms:",
                  ""]
        for r in txn:
            c = r["commits"]
            fmt = lambda x: "-" if x is None else f"{x:.1f}"
            lines.append(f"- {'capped' if r['capped'] else 'full'}, {r['path']}: {c['count']} "
                         f"commits, {c['failed']} failed, longest across a move "
                         f"{fmt(c['longest_across_ms'])} (elsewhere {fmt(c['longest_quiet_ms'])})")
    lines.extend(lmc.table_lines(results, consumer_conf, consumer_client))
    lines.append(end.rstrip("\n"))
    return "\n".join(lines) + "\n"


def write_results(path, block, consumer_client="librdkafka"):
    write_block(path, block, *block_marks(consumer_client))


def write_block(path, block, begin, end):
    """Replaces the text from `begin` to `end` in the markdown file `path`
    with `block`, or puts `block` before its microbenchmarks (or at the end)."""
    text = open(path).read() if os.path.exists(path) else ""
    if begin in text and end in text:
        head = text[:text.index(begin)]
        tail = text[text.index(end) + len(end):]
        text = head + block + tail
    else:
        marker = "## Microbenchmarks"
        if marker in text:
            i = text.index(marker)
            text = text[:i] + block + "\n" + text[i:]
        else:
            text += "\n" + block
    with open(path, "w") as fh:
        fh.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="build tree with proxy/epochgate and "
                    "tools/epochgate-mockcluster")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--interval", type=float, default=1.5, help="seconds between moves")
    ap.add_argument("--warm", type=float, default=1.5, help="seconds before the first move")
    ap.add_argument("--floor-step", type=float, default=50,
                    help="ms between the no-move instants sampled in each interval")
    ap.add_argument("--results", help="markdown file whose leader-move-clients block is "
                    "replaced (or inserted)")
    ap.add_argument("--json", help="write raw results here")
    ap.add_argument("--only", help="run only clients whose label contains this")
    ap.add_argument("--paths", default=",".join(PATHS),
                    help="comma-separated subset of: " + ", ".join(PATHS))
    ap.add_argument("--clusters", default="full,capped", help="full, capped or both")
    ap.add_argument("--reroute-yaml", help="epochgate config file for the reroute path "
                    "(default: the keys of docs/rerouting.md)")
    ap.add_argument("--debug-dir", help="keep each row's logs here: librdkafka's "
                    "debug=msg,protocol,broker,eos,topic (confluent clients), epochgate at "
                    "--log-level debug, the producer's per-message stamps and the moves' "
                    "CLOCK_MONOTONIC stamps; the debug logging slows both, so its figures "
                    "are not the bench's")
    ap.add_argument("--rtt", type=int, default=0, help="ms every mock broker waits before "
                    "answering (librdkafka's rd_kafka_mock_broker_set_rtt), so that writes "
                    "are in flight at the old leader when it steps down")
    ap.add_argument("--client-debug", default="msg,protocol,broker,eos,topic",
                    help="librdkafka debug contexts with --debug-dir ('' for none: the "
                    "timing undisturbed, the stamps still kept)")
    ap.add_argument("--consumer", action="store_true",
                    help="run a consumer of the partition (--consumer-client) beside each "
                    "producer and report its longest gap between records across each move "
                    "(bench/kafka_load/leader_move_consumer.py)")
    ap.add_argument("--consumer-conf",
                    help="the consumer's settings as JSON: librdkafka's keys, or KafkaConsumer's "
                    "keyword arguments for kafka-python (default: the fetch wait at 10 ms, "
                    + ", ".join(f"{k} {json.dumps(v[3])}" for k, v in lmc.CLIENTS.items()) + ")")
    ap.add_argument("--consumer-client", default="librdkafka", choices=sorted(lmc.CLIENTS),
                    help="the --consumer's client: librdkafka 2.15.1, Debian's kafka-python "
                    "2.0.2, or kafka-python-3 (the client matrix's kafka-python 3.x venv); a "
                    "kafka-python consumer's rows go to a RESULTS.md block of their own")
    args = ap.parse_args()
    args.consumer_conf = (json.loads(args.consumer_conf) if args.consumer_conf
                          else dict(lmc.CLIENTS[args.consumer_client][3]))
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    for p in paths:
        if p not in PATHS:
            ap.error(f"unknown path {p!r}")
    clusters = [c == "capped" for c in args.clusters.split(",")]
    command = shlex.join(["bench/kafka_load/leader_move_clients.py"] + sys.argv[1:])
    results = []
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    unsupported = None
    for capped in clusters:
        for client in CLIENTS:
            if args.only and args.only not in client[0]:
                continue
            for path in paths:
                if path == "epochgate reroute" and unsupported:
                    results.append({"client": client[0], "path": path, "capped": capped,
                                    "skipped": True})
                    continue
                with tempfile.TemporaryDirectory(prefix="eg-leader-move-") as tmp:
                    try:
                        r = run_case(args, tmp, client, path, capped)
                    except RerouteUnsupported as e:
                        unsupported = str(e)
                        print(f"reroute path skipped: this epochgate build refuses the "
                              f"rerouting config ({unsupported})", file=sys.stderr, flush=True)
                        results.append({"client": client[0], "path": path, "capped": capped,
                                        "skipped": True})
                        continue
                results.append(r)
                print(json.dumps({k: r[k] for k in ("client", "path", "capped", "errors",
                                                    "lost", "duplicated", "out_of_order")}
                                 | {"first_ack_ms": [round(x, 1) for x in r["first_ack_ms"]],
                                    "longest_ms": [round(x, 1) for x in r["longest_ms"]],
                                    "longest_control_ms": [round(x, 1)
                                                           for x in r["longest_control_ms"]],
                                    "spanning_ms": [round(x, 1) for x in r["spanning_ms"]],
                                    "first_message_ms": r["first_message_ms"],
                                    "control_median_ms": round(
                                        statistics.median(r["control_ms"]), 2),
                                    "move_command_ms_max": round(max(r["move_command_ms"]), 2),
                                    "client_errors": len(r["client_errors"]),
                                    "commits": r["commits"],
                                    "reroute": r["reroute"],
                                    "consumer_gap_ms": [round(x, 1) for x in
                                                        (r["consumer"] or {}).get("gap_ms", [])],
                                    "consumer": {k: v for k, v in (r["consumer"] or {}).items()
                                                 if not k.endswith("_ms")},
                                    "consumer_delay_ms": [round(x, 1) for x in
                                                          (r["consumer"] or {}).get("delay_ms",
                                                                                    [])]}),
                      flush=True)
    load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    note = ""
    if unsupported:
        note = (" The reroute rows were skipped: this build has no rerouting (epochgate "
                f"refused its config: {unsupported}).")
    block = table(results, command, args.rounds, args.interval, (load_start, load_end), note,
                  args.floor_step, args.consumer_conf, args.consumer_client)
    print(block)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    if args.results:
        write_results(args.results, block, args.consumer_client)


if __name__ == "__main__":
    main()
