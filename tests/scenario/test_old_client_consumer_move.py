"""An old consumer reads across leader moves through epochgate.

kafka-python 2.0.2 (Debian python3-kafka) fetches with Fetch v4: no
CurrentLeaderEpoch (KIP-320 came with v9), no KIP-951 hint. epochgate
cannot fence such a fetch by epoch and injects none (there is no field);
the old leader is still a replica, so a fetch that reaches its listener
after a move is forwarded as sent and the broker itself answers
NOT_LEADER_OR_FOLLOWER, on which kafka-python refreshes its metadata
(through epochgate) and fetches from the new leader's listener.

The check: a kafka-python consumer assigned the partition from the
beginning reads it through epochgate while a producer writes straight to the
cluster and the leader moves three times; every record the partition holds
(read back directly) reaches the consumer exactly once and in offset order.
Records written after the last move can only come through the new leader's
listener (epochgate forwards a listener's Fetch to that broker alone), so
reading them all shows the consumer followed the leader. What epochgate did
with the stale fetches is noted, not asserted; how fast is the bench's
business (bench/kafka_load/leader_move_clients.py --consumer-client
kafka-python).
"""

import time

from epochgate_testlib import old_consumer  # noqa: E402
from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "oldconsumer"
MOVES = 3
RECORDS_PER_MOVE = 150


def test_kafka_python_consumer_reads_across_leader_moves(h):
    kafka = old_consumer.kafka()
    cluster = h.start_cluster(3, ["%s:1:3" % TOPIC])
    cluster.cmd("leader %s 0 1" % TOPIC)
    gate = sl.start_gate(h, cluster)
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", retries=20,
                                   retry_backoff_ms=20, max_in_flight_requests_per_connection=1,
                                   linger_ms=0, client_id="epochgate-feed")
    h.on_close(lambda: producer.close(timeout=5))
    # fetch_max_wait_ms 10: the mock answers an empty Fetch only after
    # MaxWait, and the default (500 ms) would only slow the test down.
    reader = old_consumer.Reader(gate.bootstrap, TOPIC, bound=90, fetch_max_wait_ms=10)
    h.on_close(reader.stop)
    before = sl.scrape(gate)
    cluster.cmd("track start")

    sent = 0
    leader = 1
    fetches_at_old = []
    for move in range(MOVES + 1):
        for _ in range(RECORDS_PER_MOVE):
            producer.send(TOPIC, value=str(sent).encode(), partition=0)
            sent += 1
            time.sleep(0.002)
        producer.flush(30)
        if move == MOVES:
            break
        # The consumer is at the partition's end and fetching from the
        # leader when it moves.
        reader.wait_for(sent, timeout=30)
        old, leader = leader, leader % 3 + 1
        sl.restart_tracking_now(cluster)
        cluster.move_leader(TOPIC, 0, leader)
        fetches_at_old.append(old)
    stored = sl.read_partition(h, cluster, TOPIC, 0)
    assert len(stored) == sent, "the feed stored %d of %d records" % (len(stored), sent)
    reader.wait_for(len(stored), timeout=30)
    reader.stop()
    old_consumer.assert_read_exactly("through epochgate", reader, stored)

    after = sl.scrape(gate)
    h.note("kafka-python %s consumer, Fetch v4, %d moves: %d records, 0 lost, 0 twice, in order; "
           "epochgate fenced %d fetch partitions, injected %d epochs; Fetch requests that reached the "
           "last old leader (%d) from just before its move on: %d" % (
               kafka.__version__, MOVES, len(reader.got),
               sl.delta(after, before, sl.FENCED, api="fetch"),
               sl.delta(after, before, sl.INJECTED), fetches_at_old[-1],
               sl.track_count(cluster, fetches_at_old[-1], kw.API_FETCH)))


if __name__ == "__main__":
    harness.main(globals())
