"""Share-group leader move: a librdkafka 2.15.1 share consumer (KIP-932,
rd_kafka_share_* against the mock cluster's share groups) reads a topic
through epochgate while a partition's leader moves. ShareFetch and
ShareAcknowledge to the old leader are answered NOT_LEADER_OR_FOLLOWER with a
hint naming epochgate's listener, the consumer moves on, and every record is
delivered and acknowledged (epochgate-rdkafka-check --share-group accounts
for each).

Share sessions (KIP-932) are incremental: after its first ShareFetch the
consumer names a partition again only to add it or to piggyback
acknowledgements, and the broker answers for every partition of the session.
So the old leader's NOT_LEADER_OR_FOLLOWER usually comes from the broker for a
partition the request did not name (epochgate cannot fence what it cannot
see), and epochgate's part is to turn that answer's NodeEndpoints into its own
addresses (addresses_rewritten_total{api="share_fetch"}); a request that does
name the moved partition is fenced by epochgate itself. Either counts.

Share groups deliver at least once: records acquired from the old leader
and acknowledged after the move cannot be acknowledged there any more (the
new leader owns the share-partition state; KAFKA-17002), so such an
acknowledgement fails with NOT_LEADER_OR_FOLLOWER and the record is
delivered again by the new leader. The check therefore requires: nothing
missing, nothing unexpected, every failed acknowledgement matched by a
redelivery (so every record ends acknowledged), every record received twice
carrying the broker's raised delivery count (none delivered twice beyond
what the share group's delivery limit counts), and the failures to be
leader errors only.

The mock cluster (librdkafka 2.15.1) drops every share session on a broker
when any connection to that broker closes (rd_kafka_mock_connection_close
calls rd_kafka_mock_sharegrps_node_connection_closed with the node id only),
where a Kafka broker ends only the closed connection's sessions. A producer
leaving while the share consumer still acknowledged made the next
acknowledgement fail with SHARE_SESSION_NOT_FOUND in a few runs out of 50, so
epochgate-rdkafka-check keeps its producer connected until its consumer is
done, and nothing else connects to or leaves the brokers during the run. The
harness's own look at the partition (sl.move_view_first reads it from the
first broker before and right after the move) also closed a connection:
acknowledgements pending at that broker then failed with
SHARE_SESSION_NOT_FOUND (7 runs in 40 under load); its Metadata connection
now stays open (tests/lib/epochgate_testlib/harness.py, MockCluster.metadata).
"""

import os
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib.scenario_lib import harness  # noqa: E402

TOPIC = "shared"


SHARE_FETCH = 78
# ShareFetch requests the old leader must have received before the move: the
# first opens the share session, the next ones carry it on (and acknowledge
# what the first ones delivered), so the move lands mid-session.
SESSION_FETCHES = 3


def test_share_consumer_across_leader_move(h):
    share_consumer_across_leader_move(h, "shared-group")


def share_consumer_across_leader_move(h, group):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC], args=[
        "--rebalance-delay-ms", "0", "--share-offset-reset", "earliest"])
    # The move is played view first (sl.move_view_first): until the real
    # move, the brokers' own Metadata answers still say the old epoch, and
    # while the clients start up three of them would roll the pushed epoch
    # back (policy.epoch_rollback_confirmations, as for a bogus epoch; 1 run
    # in 50). Two still stop the fencing; the rollback is not what this tests.
    gate = sl.start_gate(h, cluster, config="policy:\n  epoch_rollback_confirmations: 100\n")
    gc = sl.GateClient(h, gate)
    sl.open_node_connections(gc, [TOPIC])
    log = os.path.join(h.workdir, "clients.rdkafka.%s.log" % group)
    old_leader = cluster.partition(TOPIC, 0)["leader"]
    cluster.cmd("track start")
    check = h.rdkafka_check_async([
        "--bootstrap", gate.bootstrap, "--topic", TOPIC, "--partitions-keyed", "--idempotent",
        "--duration-s", "4", "--rate", "500", "--concurrent", "--share-group", group,
        "--debug", "broker,metadata", "--log-file", log])
    # The move waits for the mock's view of the share session, not a clock.
    started = time.monotonic()
    deadline = started + 20
    while sl.track_count(cluster, old_leader, SHARE_FETCH) < SESSION_FETCHES:
        assert time.monotonic() < deadline, (
            "the share consumer's ShareFetch never reached the old leader %d %d times in 20 s"
            % (old_leader, SESSION_FETCHES))
        time.sleep(0.02)
    waited = time.monotonic() - started
    m1 = sl.scrape(gate)
    new = sl.other_broker(old_leader)
    moved_us, epoch, old, _ = sl.move_view_first(cluster, gc, TOPIC, 0, new)
    s = check.result(timeout=120, expect_pass=False)
    m2 = sl.scrape(gate)
    assert s["missing"] == 0 and s["unexpected"] == 0 and s["misplaced"] == 0, s
    assert s["failed"] == 0 and s["acked"] == s["produced"] > 1000, s
    redelivered = s["consumed"] - s["acked"]
    assert s["duplicates"] == redelivered and s["ack_failures"] <= redelivered, (
        "acknowledgement failures not matched by redeliveries: %s" % s)
    # Every second receipt came with the broker's delivery count above 1:
    # the broker counted it against the group's delivery limit; nothing
    # reached the consumer twice behind its back (a ShareFetch answer
    # replayed or duplicated on the way).
    assert s["duplicates"] <= s["redelivered"], (
        "records received twice without a raised delivery count: %s" % s)
    assert s["ack_failures"] == 0 or "NOT_LEADER" in s["first_error"], s
    h.assert_only_front_connections(log, cluster)
    share_apis = ("share_fetch", "share_acknowledge")
    share_fenced = {(l["api"], l["reason"]): v for l, v in m2.rows(sl.FENCED)
                    if l["api"] in share_apis}
    assert all(reason == "not_leader" for _, reason in share_fenced), share_fenced
    fenced = sum(share_fenced.values()) - sum(
        v for l, v in m1.rows(sl.FENCED) if l["api"] in share_apis)
    rewritten = sum(sl.delta(m2, m1, "epochgate_addresses_rewritten_total", api=a)
                    for a in share_apis)
    assert fenced + rewritten >= 1, (
        "no share-API hint crossed epochgate after the move (fenced %d, rewritten %d): %s"
        % (fenced, rewritten, sl.fences_text(m2)))
    took = (new, epoch) in sl.hint_updates(log, TOPIC, 0)
    h.note("move after %.2fs (the old leader's %d ShareFetch); share group across p0 %d->%d "
           "(epoch %d): %d produced, %d delivered (%d twice, %d "
           "acknowledgements to the old leader refused), 0 missing; share requests fenced by "
           "epochgate: %d, "
           "broker share hints rewritten to epochgate's address: %d; the share consumer %s; %s"
           % (waited, SESSION_FETCHES, old, new, epoch, s["produced"], s["consumed"], redelivered,
              s["ack_failures"], fenced, rewritten,
              "took a hint" if took else "refreshed metadata (librdkafka 2.15.1 applies share "
              "hints only from ShareAcknowledge)", sl.fences_text(m2)))


test_share_consumer_across_leader_move.timeout = 300


if __name__ == "__main__":
    harness.main(globals())
