"""kafka-go 0.2.1 (Debian) reading a 200-partition topic with a group
Reader: through epochgate it must not wait longer than it does straight at
the embedded cluster.

The Reader opens a connection per partition at once (a metadata lookup, then
the leader), about 400 dials at the cluster's small listen backlog. Straight
at the cluster a dial that meets a full backlog times out (Dialer.Timeout)
and the Reader retries it. Through epochgate the client's dial is accepted
at once, so the Dialer's timeout is met; if epochgate's own upstream
connection is then left in the cluster's backlog, the lookup waits for an
answer with no deadline of its own and that partition is never read.
epochgate must give the client what it would get directly: a failed
connection it can retry, so every partition is read within a bound.

The direct run is the yardstick and is only reported: on a loaded machine
it, too, can leave partitions unread (the kernel completes handshakes the
cluster never accepts), which says nothing about epochgate."""

import uuid

from epochgate_testlib import clients_lib as cl  # noqa: E402
from epochgate_testlib import harness  # noqa: E402

PARTITIONS = 200
DIRECT_SECONDS = 30
GATE_SECONDS = 45
# What epochgate may add to the direct time: noticing an upstream connection
# that never answers (its upstream connect timeout) and the client's retry.
MARGIN_SECONDS = 15


def _wide_read(h, both, way, bootstrap, seconds):
    topic = both.topic(PARTITIONS, 3)
    run_id = uuid.uuid4().hex[:12]
    # Seeded straight at the cluster, partition by partition: not under test.
    seed = cl.PeerRun(h, "kafkago", both.cluster.bootstrap, topic,
                      ["--mode", "seed", "--partitions", str(PARTITIONS),
                       "--messages", str(PARTITIONS), "--timeout", "60"],
                      run_id=run_id, name="kafkago-seed-%s" % way).result(75)
    assert seed["acked"] == PARTITIONS, "seeding %s: %s" % (topic, seed)
    hw = cl.high_watermarks(both.cluster, topic, PARTITIONS)
    assert sum(hw.values()) == PARTITIONS, "seeded log holds %s" % hw
    r = cl.PeerRun(h, "kafkago", bootstrap, topic,
                   ["--mode", "wide-read", "--messages", str(PARTITIONS),
                    "--timeout", str(seconds)],
                   run_id=run_id, name="kafkago-wide-%s" % way).result(seconds + 30)
    cl.check_front("kafka-go wide read %s" % way, r, both.cluster, way)
    h.note("kafka-go %s: %d of %d partitions read%s; %d dials (slowest %.1fs), %d reader "
           "errors" % (way, r["unique"], PARTITIONS,
                       " in %.1fs" % r["all_seconds"] if r["all_seconds"] >= 0
                       else " when its %ds were up" % seconds,
                       r["dials"], r["dial_seconds_max"], r["reader_errors"]))
    return r


def test_kafkago_200_partitions_waits_no_longer_through_epochgate(h):
    both = cl.BothWays(h, brokers=3)
    direct = _wide_read(h, both, "direct", both.cluster.bootstrap, DIRECT_SECONDS)
    if both.gate is None:
        return
    gate = _wide_read(h, both, "epochgate", both.gate.bootstrap, GATE_SECONDS)
    assert gate["unique"] == PARTITIONS and gate["all_seconds"] >= 0, (
        "through epochgate kafka-go read %d of %d partitions in %ds (directly: %d in %s): "
        "the rest got no answer on connections epochgate had accepted" % (
            gate["unique"], PARTITIONS, GATE_SECONDS, direct["unique"],
            "%.1fs" % direct["all_seconds"] if direct["all_seconds"] >= 0
            else "%ds" % DIRECT_SECONDS))
    assert gate["duplicates"] == 0, gate
    if direct["all_seconds"] >= 0:
        assert gate["all_seconds"] <= direct["all_seconds"] + MARGIN_SECONDS, (
            "through epochgate kafka-go took %.1fs for what took %.1fs directly"
            % (gate["all_seconds"], direct["all_seconds"]))


test_kafkago_200_partitions_waits_no_longer_through_epochgate.timeout = 240

if __name__ == "__main__":
    harness.main(globals())
