"""Rerouting for clients older than KIP-951 (docs/rerouting.md, "Order, per
producer and partition" and "One more hop"), against the mock cluster with
real clients, the leader moved by the cluster and epochgate told nothing:

- kafka-python 2.0.2 (Debian; Produce v7, five requests in flight,
  retries=0, so every error it is given reaches the application) across
  several leader moves: a write that reaches the old leader's listener
  while earlier writes of the same partition are still there waits for them
  (held for order) instead of falling back, so the application sees no
  error, and the partition read back directly holds every acknowledged
  message once and in the order sent;
- librdkafka 2.0.2 (Debian, through python3-confluent-kafka) never moves by
  itself, so after the second move epochgate's view is stale when it
  reroutes: the leader it names answers NOT_LEADER_OR_FOLLOWER, and the
  write takes one more hop to the leader an urgent refresh names. The
  client's own log shows no NOT_LEADER_OR_FOLLOWER, no delivery error, and
  the partition holds every message once, in order;
- raw frames: a write sent straight to the new leader, or one sent to the old
  leader's listener once the view knows the move, while an earlier write of
  the same producer and partition is still at the old leader (its answer,
  NOT_LEADER_OR_FOLLOWER, slowed by the mock's round trip), is held until
  the earlier one is rerouted and answered: both succeed and the partition
  stores them in the order sent.
"""

import json
import os
import subprocess
import sys
import threading
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "old"
REROUTES = "epochgate_reroutes_total"
PY = "/usr/bin/python3"
CONFIG = sl.reroute_config(TOPIC)

# One message per millisecond to partition 0 for `seconds`; writes
# {"sent": n, "acks": {i: [ok, error name]}} to `out`. kafka-python 2.0.2 at
# its defaults (acks=1, retries=0, five requests in flight).
KAFKA_PYTHON = r"""
import json, sys, time
from kafka import KafkaProducer
bootstrap, topic, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
p = KafkaProducer(bootstrap_servers=bootstrap)
acks = {}
def ok(i):
    return lambda md: acks.__setitem__(i, [True, ''])
def bad(i):
    return lambda e: acks.__setitem__(i, [False, type(e).__name__])
p.send(topic, value=b'-1', partition=0).get(timeout=30)
print('ready', flush=True)
start = time.monotonic()
i = 0
while time.monotonic() - start < seconds:
    if time.monotonic() >= start + i / 1000.0:
        f = p.send(topic, value=str(i).encode(), partition=0)
        f.add_callback(ok(i))
        f.add_errback(bad(i))
        i += 1
    else:
        time.sleep(0.0002)
p.flush(30)
json.dump({'sent': i, 'acks': acks}, open(out, 'w'))
"""

# The same with Debian's librdkafka (python3-confluent-kafka as shipped), its
# msg debug context on stderr.
CONFLUENT = r"""
import json, sys, time
from confluent_kafka import Producer, libversion
bootstrap, topic, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
p = Producer({'bootstrap.servers': bootstrap, 'debug': 'msg,broker'})
acks = {}
def dr(err, msg):
    acks[int(msg.value())] = [err is None, err.name() if err else '']
p.produce(topic, value=b'-1', partition=0, on_delivery=dr)
p.flush(30)
print('ready', libversion()[0], flush=True)
start = time.monotonic()
i = 0
while time.monotonic() - start < seconds:
    if time.monotonic() >= start + i / 1000.0:
        p.produce(topic, value=str(i).encode(), partition=0, on_delivery=dr)
        i += 1
    p.poll(0)
    time.sleep(0.0002)
p.flush(30)
json.dump({'sent': i, 'acks': acks, 'lib': libversion()[0]}, open(out, 'w'))
"""


def _producer_across_moves(h, script, name, moves=4, interval=1.0):
    """Runs `script` through epochgate while the partition's leader moves
    `moves` times; returns (result, stored values, metrics before, after, log)."""
    cluster = h.start_cluster(3, ["%s:1:3" % TOPIC])
    cluster.cmd("leader %s 0 1" % TOPIC)
    gate = sl.start_gate(h, cluster, config=CONFIG)
    out = os.path.join(h.workdir, name + ".json")
    log = os.path.join(h.workdir, name + ".log")
    seconds = 1.0 + moves * interval + 1.0
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    with open(log, "w") as logf:
        proc = subprocess.Popen([PY, "-c", script, gate.bootstrap, TOPIC, str(seconds), out],
                                stdout=subprocess.PIPE, stderr=logf, env=env,
                                start_new_session=True)
        h.on_close(lambda: proc.poll() is None and proc.kill())
        ready = proc.stdout.readline().decode()
        assert ready.startswith("ready"), "producer did not start: %r" % ready
        m1 = sl.scrape(gate)
        time.sleep(1.0)
        leader = 1
        for _ in range(moves):
            leader = leader % 3 + 1
            cluster.move_leader(TOPIC, 0, leader)
            time.sleep(interval)
        proc.wait(timeout=seconds + 60)
    assert proc.returncode == 0, "producer failed: see %s" % log
    m2 = sl.scrape(gate)
    with open(out) as f:
        res = json.load(f)
    stored = [int(v) for v in sl.read_partition(h, cluster, TOPIC, 0, timeout=30)]
    return res, stored, m1, m2, log


def _check_stored(res, stored):
    """Every acknowledged message stored once, nothing stored out of order."""
    acks = {int(k): v for k, v in res["acks"].items()}
    ok = {i for i, a in acks.items() if a[0]}
    seen = set()
    dup = [v for v in stored if v in seen or seen.add(v)]
    assert not dup, "stored twice: %s" % dup[:10]
    lost = sorted(ok - seen)
    assert not lost, "acknowledged but not stored: %s" % lost[:10]
    high, ooo = -2, []
    for v in stored:
        if v < high:
            ooo.append((v, high))
        high = max(high, v)
    assert not ooo, "stored after a later message: %s" % ooo[:10]
    unanswered = [i for i in range(res["sent"]) if i not in acks]
    assert not unanswered, "never answered: %s" % unanswered[:10]


def _fell_back(m2, m1):
    return {r: v for r, v in ((r, sl.delta(m2, m1, REROUTES, result="fell_back", reason=r))
                              for r in ("earlier_in_flight", "later_in_flight", "earlier_held",
                                        "stream_fell_back", "hold_full", "hold_timeout",
                                        "second_hop", "no_leader", "upstream_failed"))
            if v}


def _gap_runs(m2, m1):
    """Runs of rerouted writes held together, by outcome (docs/metrics.md,
    epochgate_reroute_sequence_gaps_total)."""
    return {o: v for o, v in ((o, sl.delta(m2, m1, "epochgate_reroute_sequence_gaps_total", outcome=o))
                              for o in ("resent", "one_more_hop", "stored", "unproven",
                                        "hold_timeout", "closed", "no_room"))
            if v}


def test_kafka_python_writes_behind_earlier_ones_wait_instead_of_failing(h):
    res, stored, m1, m2, _ = _producer_across_moves(h, KAFKA_PYTHON, "kafka-python")
    errors = sorted({a[1] for a in res["acks"].values() if not a[0]})
    n_errors = sum(1 for a in res["acks"].values() if not a[0])
    delivered = sl.delta(m2, m1, REROUTES, result="delivered")
    held = sl.delta(m2, m1, "epochgate_reroute_held_total")
    h.note("kafka-python 2.0.2, 4 unassisted moves: %d sent, %d errors %s; %d partitions "
           "rerouted, %d writes held for order, fell back %s; runs held together %s"
           % (res["sent"], n_errors, errors, delivered, held, _fell_back(m2, m1) or "never",
              _gap_runs(m2, m1) or "none"))
    _check_stored(res, stored)
    # kafka-python never resends (retries=0): every error it is given is the
    # application's. Without the hold, a write behind an earlier one at the
    # old leader fell back, and took the writes waiting for the new leader
    # with it.
    assert n_errors == 0, "kafka-python reported %d delivery errors: %s" % (n_errors, errors)
    assert delivered > 0, "epochgate rerouted nothing"


test_kafka_python_writes_behind_earlier_ones_wait_instead_of_failing.timeout = 150


def test_librdkafka_2_0_2_takes_one_more_hop_past_a_stale_view(h):
    res, stored, m1, m2, log = _producer_across_moves(h, CONFLUENT, "rdkafka-2.0.2")
    n_errors = sum(1 for a in res["acks"].values() if not a[0])
    told = sl.client_leader_errors(log, TOPIC, 0)
    h.note("librdkafka %s, 4 unassisted moves: %d sent, %d errors, %d NOT_LEADER batches seen "
           "by the client; %d rerouted, fell back %s"
           % (res["lib"], res["sent"], n_errors, told,
              sl.delta(m2, m1, REROUTES, result="delivered"), _fell_back(m2, m1) or "never"))
    assert res["lib"].startswith("2.0."), "not Debian's librdkafka 2.0: %s" % res["lib"]
    _check_stored(res, stored)
    assert n_errors == 0
    # Without the second hop, every move after the first is a `second_hop`
    # fall-back: the client is told NOT_LEADER_OR_FOLLOWER and waits its
    # retry backoff.
    assert told == 0, "the client was told NOT_LEADER_OR_FOLLOWER %d times" % told
    assert sl.delta(m2, m1, REROUTES, result="fell_back", reason="second_hop") == 0


test_librdkafka_2_0_2_takes_one_more_hop_past_a_stale_view.timeout = 150


def _write_behind_one_at_the_old_leader(h, b_node):
    """A goes to the old leader's listener just after the move (the old
    leader answers NOT_LEADER_OR_FOLLOWER, 700 ms late); the view learns the
    move from a Metadata through epochgate; then B (same producer: same host
    and client id) goes to `b_node`'s listener. Both must succeed and be
    stored A then B."""
    cluster = h.start_cluster(3, ["%s:1:3" % TOPIC])
    cluster.cmd("leader %s 0 1" % TOPIC)
    gate = sl.start_gate(h, cluster, config=CONFIG + "reroute:\n  max_hold_ms: 1000\n")
    gc = sl.GateClient(h, gate)
    md = gc.metadata([TOPIC])
    epoch = md["topics"][TOPIC]["partitions"][0]["leader_epoch"]
    sl.wait_view(gate, TOPIC, 0, 1, epoch)
    old_conn = gc.conn(1)
    b_conn = gc.conn(b_node)
    start = sl.end_offset(cluster, TOPIC, 0)
    cluster.cmd("rtt 1 700")
    cluster.move_leader(TOPIC, 0, 2)
    t0 = time.monotonic()
    old_conn.send(sw.produce_request(7001, TOPIC, [(0, kw.record_batch([b"A"]))], acks=1,
                                     version=10))
    gc.metadata([TOPIC], node=2)
    sl.wait_view(gate, TOPIC, 0, 2, epoch + 1)
    m1 = sl.scrape(gate)
    answers = {}

    def recv(name, conn):
        answers[name] = (sw.parse_produce_response(conn.recv_frame(timeout=10), 10),
                         time.monotonic())

    b_conn.send(sw.produce_request(7002, TOPIC, [(0, kw.record_batch([b"B"]))], acks=1,
                                   version=10))
    if b_conn is old_conn:
        recv("A", old_conn)
        recv("B", old_conn)
    else:
        b_thread = threading.Thread(target=recv, args=("B", b_conn))
        b_thread.start()
        recv("A", old_conn)
        b_thread.join(timeout=10)
    m2 = sl.scrape(gate)
    assert "B" in answers, "B was never answered"
    errs = {n: [p[2] for p in a[0]["partitions"]] for n, a in answers.items()}
    h.note("B to node %d: A answered %.0f ms, B %.0f ms after A was sent; errors %s; "
           "held %d, fell back %s"
           % (b_node, (answers["A"][1] - t0) * 1e3, (answers["B"][1] - t0) * 1e3, errs,
              sl.delta(m2, m1, "epochgate_reroute_held_total"), _fell_back(m2, m1) or "never"))
    # Both writes succeed, and the partition stores them in the order sent.
    assert errs == {"A": [0], "B": [0]}, errs
    got = sl.read_partition(h, cluster, TOPIC, 0, start=start, timeout=15)
    assert got == ["A", "B"], "stored %s" % got
    assert answers["B"][1] >= answers["A"][1] - 0.05, "B was answered before A"


def test_direct_write_to_new_leader_waits_for_earlier_write_at_old_leader(h):
    """The client moved by itself (its own Metadata) and writes B straight to
    the new leader: B waits until A, refused by the old leader, is rerouted
    and answered (before, B was stored first and A after it)."""
    _write_behind_one_at_the_old_leader(h, 2)


def test_write_to_reroute_waits_for_earlier_write_at_old_leader(h):
    """The client has not moved (kafka-python pipelining to the old
    leader): B reaches the old leader's listener after the view learned the
    move, while A is still there. B is held, then rerouted behind A (before,
    it fell back with `earlier_in_flight`: an error for the client)."""
    _write_behind_one_at_the_old_leader(h, 1)


if __name__ == "__main__":
    harness.main(globals())
