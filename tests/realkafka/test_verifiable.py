"""Kafka's own VerifiableProducer (idempotent, acks=all) and VerifiableConsumer
against a real Apache Kafka 4.4.0 cluster, one pair straight at the cluster
and one pair through epochgate, running at the same time on two topics with
the same replica assignment, so every fault hits both. Faults, one per test:
PREFERRED-election moves every two seconds, a clean bounce (SIGTERM) of the
leader, a SIGKILL of the leader, and reassignments that drop the leader.

Each pair is validated the way Kafka's system tests validate delivery
(kafkatest utils.validate_delivery): every acknowledged value consumed, no
value at two offsets (idempotence), each partition's records in the log in
the order they were sent (the idempotent producer's promise: the tool's
values count up, so offsets must rise with them), and the (partition, offset)
acknowledged for each value is where the consumer found it. The order of the
acknowledgements themselves is only reported: straight at Kafka 4.4.0, the
Java producer has acknowledged a batch before an earlier one (offsets 1845
then 1841) across a preferred-leader move, with the log in order. Through
epochgate, after every move its /debug/metadata must name the cluster's
leader and epoch within the refresher's bound, and the fence and hint
counters show what it did with the real epochs. Notes give the first acknowledgement after each fault and the
longest gap between acknowledgements, direct and through epochgate.

    PYTHONPATH=tests/lib /usr/bin/python3 tests/realkafka/test_verifiable.py --build-dir build
"""

import json
import os
import signal
import subprocess
import threading
import time

from epochgate_testlib import realkafka_lib as rk  # noqa: E402
from epochgate_testlib.realkafka_lib import harness, sl, kafka_cluster  # noqa: E402

THROUGHPUT = 200          # messages/s per producer
REFRESH_MS = 2000         # epochgate's periodic Metadata refresh in these tests
VIEW_BOUND = REFRESH_MS * 1.1 / 1000 + 3.0   # refresh (+10% jitter) plus the Metadata round trips
GROUP_PROTOCOL = "consumer"   # KIP-848; brokers before 4.0 need "classic"
GATE_CONFIG = """refresher:
  interval_ms: %d
""" % REFRESH_MS


class Tool:
    """A Verifiable* tool; its stdout JSON events stamped on arrival."""

    def __init__(self, h, c, name, main, args):
        argv, self.conn_log = rk.java_argv(h, c, main, args, name)
        self.name = name
        self.stopped_at = None   # monotonic time SIGTERM was sent
        self.events = []
        self.lock = threading.Lock()
        self.err = open(os.path.join(h.workdir, name + ".stderr"), "ab")
        self.out = open(os.path.join(h.workdir, name + ".stdout"), "a")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self.err, cwd=h.workdir, start_new_session=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        h.on_close(self.kill)

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            t = time.monotonic()
            line = raw.decode(errors="replace").strip()
            self.out.write(line + "\n")
            if line.startswith("{"):
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                ev["_t"] = t
                with self.lock:
                    self.events.append(ev)

    def of(self, name):
        with self.lock:
            return [e for e in self.events if e.get("name") == name]

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.stopped_at = time.monotonic()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.thread.join(timeout=10)

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        for f in (self.err, self.out):
            if not f.closed:
                f.close()


class Pair:
    """VerifiableProducer + VerifiableConsumer on one topic."""

    def __init__(self, h, c, tag, bootstrap, topic):
        self.tag, self.topic = tag, topic
        cfg = os.path.join(h.workdir, "producer-%s.properties" % tag)
        with open(cfg, "w") as f:
            # What kafkatest writes for an idempotent VerifiableProducer (the
            # tool itself forces retries=0).
            f.write("enable.idempotence=true\nretries=1000000\nacks=all\n"
                    "max.in.flight.requests.per.connection=5\n")
        self.consumer = Tool(h, c, "consumer-" + tag, "org.apache.kafka.tools.VerifiableConsumer",
                             ["--bootstrap-server", bootstrap, "--topic", topic, "--group-id", "vg-" + topic,
                              "--group-protocol", GROUP_PROTOCOL, "--reset-policy", "earliest", "--verbose"])
        self.producer = Tool(h, c, "producer-" + tag, "org.apache.kafka.tools.VerifiableProducer",
                             ["--bootstrap-server", bootstrap, "--topic", topic, "--acks", "-1",
                              "--throughput", str(THROUGHPUT), "--producer.config", cfg,
                              # Keyed records reach every partition all the
                              # time; null keys go to one partition per batch
                              # (sticky partitioner), which hides recovery gaps.
                              "--repeating-keys", "30"])

    def acked(self):
        return self.producer.of("producer_send_success")

    def validate(self):
        """kafkatest's validate_delivery plus (partition, offset) equality."""
        acked = self.acked()
        # VerifiableProducer's shutdown hook closes the producer while its
        # main thread may be inside send() (the stop flag is not volatile):
        # that send fails with "Cannot perform operation after producer has
        # been closed" before any byte leaves the client. Such an error says
        # nothing about the path to the broker, so it is counted apart.
        errors, at_close = [], []
        for e in self.producer.of("producer_send_error"):
            stopping = self.producer.stopped_at is not None and e["_t"] >= self.producer.stopped_at
            closed = "after producer has been closed" in (e.get("message") or "")
            (at_close if stopping and closed else errors).append(e)
        consumed = self.consumer.of("record_data")
        at = {}
        for r in consumed:
            at.setdefault(r["value"], set()).add((r["partition"], r["offset"]))
        missing = [a["value"] for a in acked if a["value"] not in at]
        duplicates = [v for v, places in at.items() if len(places) > 1]
        misplaced = [a["value"] for a in acked
                     if a["value"] in at and at[a["value"]] != {(a["partition"], a["offset"])}]
        # Log order: per partition, offsets rise with the values (send order).
        log_disorder = 0
        sent = {}
        for a in acked:
            sent.setdefault(a["partition"], []).append((int(a["value"]), a["offset"]))
        for records in sent.values():
            records.sort()
            log_disorder += sum(1 for (_, o1), (_, o2) in zip(records, records[1:]) if o2 <= o1)
        # Acknowledgement order, reported only (see the module's docstring).
        ack_disorder = 0
        last = {}
        for a in acked:
            if a["offset"] <= last.get(a["partition"], -1):
                ack_disorder += 1
            last[a["partition"]] = a["offset"]
        return {"acked": len(acked), "send_errors": len(errors), "send_after_close": len(at_close),
                "consumed": len(at),
                "missing": len(missing), "duplicates": len(duplicates), "misplaced": len(misplaced),
                "log_order_violations": log_disorder,
                "acks_out_of_offset_order": ack_disorder,
                "first_missing": missing[:5],
                "error_kinds": sorted({"%s: %s" % (e.get("exception"), e.get("message")) for e in errors})}

    def first_ack_after(self, t, partition=None):
        ts = [a["_t"] for a in self.acked() if a["_t"] >= t and (partition is None or a["partition"] == partition)]
        return (min(ts) - t) if ts else None

    def longest_gap(self, t0, t1, partition=None):
        ts = sorted(a["_t"] for a in self.acked() if t0 <= a["_t"] <= t1
                    and (partition is None or a["partition"] == partition))
        return max((b - a for a, b in zip(ts, ts[1:])), default=None)


def _wait_acks(pairs, n, timeout=60):
    harness.wait_until(lambda: all(len(p.acked()) >= n for p in pairs), timeout, interval=0.2,
                       what="%d acknowledged records per producer" % n)


def _run(h, name, fault):
    c = rk.cluster(h)
    gate = sl.start_gate(h, None, config=GATE_CONFIG, upstream=c.bootstrap)
    topics = {tag: rk.create_topic(c, "%s-%s" % (name, tag)) for tag in ("direct", "gate")}
    pairs = {"direct": Pair(h, c, "direct", c.bootstrap, topics["direct"]),
             "gate": Pair(h, c, "gate", gate.bootstrap, topics["gate"])}
    before = sl.scrape(gate)
    _wait_acks(pairs.values(), 300, timeout=90)
    ctx = {"h": h, "c": c, "gate": gate, "topics": topics, "pairs": pairs, "t0": time.monotonic(),
           "marks": []}
    fault(ctx)
    # Keep producing a little after the last fault, then stop the producers.
    settle = len(pairs["gate"].acked())
    _wait_acks(pairs.values(), settle + 2 * THROUGHPUT, timeout=90)
    t_end = time.monotonic()
    for p in pairs.values():
        p.producer.stop()
    # Everything acknowledged must reach the consumer (bounded).
    harness.wait_until(lambda: all({a["value"] for a in p.acked()} <=
                                   {r["value"] for r in p.consumer.of("record_data")}
                                   for p in pairs.values()),
                       90, interval=0.5, what="consumers to catch up with every acknowledged record")
    for p in pairs.values():
        p.consumer.stop()
    after = sl.scrape(gate)
    results = {tag: p.validate() for tag, p in pairs.items()}
    for tag, r in results.items():
        h.note("%s %s: %s" % (name, tag, json.dumps({k: v for k, v in r.items() if v or k == "acked"})))
    for tag, r in results.items():
        assert r["missing"] == 0 and r["duplicates"] == 0 and r["misplaced"] == 0, (tag, r)
        assert r["log_order_violations"] == 0, (tag, r)
        assert r["acked"] > 500, (tag, r)
    # Same errors seen by the application both ways: none through epochgate
    # where there were none direct.
    assert results["gate"]["send_errors"] <= results["direct"]["send_errors"], results
    for tag, p in pairs.items():
        gaps = [p.longest_gap(ctx["t0"], t_end, part) for part in range(3)]
        firsts = ["%.2f" % x if x is not None else "-" for x in
                  (p.first_ack_after(t, part) for t, part in ctx["marks"])]
        h.note("%s %s: longest ack gap per partition %s s; first ack on the moved partition after each fault %s s"
               % (name, tag, ["%.2f" % g if g is not None else "-" for g in gaps], firsts))
    h.note("%s epochgate: %s" % (name, sl.fences_text(after)))
    gports = rk.gate_ports(gate)
    rk.assert_ports(rk.connected_ports(pairs["gate"].producer.conn_log) |
                    rk.connected_ports(pairs["gate"].consumer.conn_log), gports, c.broker_ports,
                    "Verifiable tools through epochgate")
    rk.assert_ports(rk.connected_ports(pairs["direct"].producer.conn_log), c.broker_ports, c.broker_ports,
                    "direct control")
    return ctx, before, after


def _move_both(ctx, partition, target):
    """Moves `partition` of both topics to `target`; checks epochgate's view."""
    c, gate, topics = ctx["c"], ctx["gate"], ctx["topics"]
    t = time.monotonic()
    ctx["marks"].append((t, partition))
    ms = [c.ctl("move %s %d %d" % (topics[tag], partition, target))["ms"] for tag in ("gate", "direct")]
    lag = rk.wait_view_matches(gate, c, [topics["gate"]], VIEW_BOUND)
    ctx.setdefault("move_ms", []).append(ms[0])
    ctx.setdefault("view_lag", []).append(lag)


def _leader(ctx, partition):
    lead = rk.leaders(ctx["c"], [ctx["topics"]["gate"], ctx["topics"]["direct"]])
    g, d = lead[(ctx["topics"]["gate"], partition)], lead[(ctx["topics"]["direct"], partition)]
    return g, d


def preferred_moves(h, name="moves"):
    """Nine PREFERRED moves, one every 2 s, round the partitions."""
    def fault(ctx):
        for i in range(9):
            p = i % 3
            (leader, epoch), _ = _leader(ctx, p)
            _move_both(ctx, p, 1 + leader % 3)
            (nl, ne), _ = _leader(ctx, p)
            assert nl == 1 + leader % 3 and ne == epoch + 1, "move %d: %s -> %s" % (i, (leader, epoch), (nl, ne))
            time.sleep(2)
        h.note("moves: admin reorder+election %s ms; view caught up after %s s" % (
            ["%.0f" % x for x in ctx["move_ms"]], ["%.2f" % x for x in ctx["view_lag"]]))

    ctx, before, after = _run(h, name, fault)
    acted = sum(sl.delta(after, before, n) for n in (sl.FENCED, sl.HINTS))
    assert acted > 0, "9 leader moves under load and epochgate neither fenced nor hinted: %s" % sl.fences_text(after)
    return ctx, before, after


def test_preferred_moves_every_two_seconds(h):
    preferred_moves(h)


def _bounce(h, name, hard):
    def fault(ctx):
        c = ctx["c"]
        (leader, epoch), (dleader, _) = _leader(ctx, 0)
        assert leader == dleader, "both topics share the assignment"
        t = time.monotonic()
        ctx["marks"].append((t, 0))
        c.stop_broker(leader, hard=hard)
        moved = harness.wait_until(lambda: (lambda l: l[0] if l[0][0] != leader else None)(_leader(ctx, 0)),
                                   30, interval=0.05, what="a new leader for partition 0")
        failover = time.monotonic() - t
        lag = rk.wait_view_matches(ctx["gate"], c, [ctx["topics"]["gate"]], VIEW_BOUND)
        assert moved[1] > epoch, (moved, epoch)
        down = c.ctl("describe " + ctx["topics"]["gate"])["partitions"][0]
        h.note("partition 0 while broker %d is down: isr %s elr %s" % (leader, down["isr"], down["elr"]))
        h.note("%s of leader %d: new leader %d epoch %d -> %d after %.2f s; epochgate's view %.2f s later" % (
            "SIGKILL" if hard else "SIGTERM", leader, moved[0], epoch, moved[1], failover, lag))
        time.sleep(3)
        t = time.monotonic()
        c.start_broker(leader)
        for topic in ctx["topics"].values():
            c.wait_isr(topic)
        h.note("broker %d back in every ISR %.1f s after its restart" % (leader, time.monotonic() - t))
        rk.wait_view_matches(ctx["gate"], c, [ctx["topics"]["gate"]], VIEW_BOUND)

    _run(h, name, fault)


def test_clean_bounce_of_leader(h):
    _bounce(h, "bounce", hard=False)


def test_sigkill_of_leader(h):
    _bounce(h, "kill", hard=True)


def test_reassignment_away_from_leader(h):
    def fault(ctx):
        c, topics = ctx["c"], ctx["topics"]
        for p in (1, 2):
            (leader, epoch), _ = _leader(ctx, p)
            rest = [b for b in kafka_cluster.BROKERS if b != leader]
            t = time.monotonic()
            ctx["marks"].append((t, p))
            ms = [c.ctl("reassign %s %d %s" % (topics[tag], p, ",".join(map(str, rest))))["ms"]
                  for tag in ("gate", "direct")]
            (nl, ne), _ = _leader(ctx, p)
            assert nl in rest and ne > epoch, (p, (leader, epoch), (nl, ne))
            lag = rk.wait_view_matches(ctx["gate"], c, [topics["gate"]], VIEW_BOUND)
            h.note("reassign p%d %s -> %s: leader %d -> %d, epoch %d -> %d, %s ms; view %.2f s" % (
                p, [leader] + rest, rest, leader, nl, epoch, ne, ["%.0f" % x for x in ms], lag))
            time.sleep(2)
            for tag in ("gate", "direct"):
                c.ctl("reassign %s %d %s" % (topics[tag], p, ",".join(map(str, rest + [leader]))))
            rk.wait_view_matches(ctx["gate"], c, [topics["gate"]], VIEW_BOUND)
            time.sleep(2)

    _run(h, "reassign", fault)


for _f in list(globals().values()):
    if callable(_f) and getattr(_f, "__name__", "").startswith("test_"):
        _f.timeout = 300

if __name__ == "__main__":
    harness.main(globals())
