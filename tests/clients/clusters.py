"""The two clusters the client matrix runs on, behind one small interface:
create a topic, move every leader of a topic, and the addresses a client
may legitimately learn (the cluster's own, or epochgate's).

Owns nothing it did not start: the real cluster comes from
tests/lib/epochgate_testlib/realkafka_lib.py (one per test file, stopped at
exit), the mock cluster and epochgate from
tests/lib/epochgate_testlib/harness.py (stopped by the harness when the test
ends).
"""

import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
from epochgate_testlib import realkafka_lib as rk  # noqa: E402
from epochgate_testlib.realkafka_lib import harness  # noqa: E402


class RealCluster:
    """Apache Kafka 4.4.0, 1 controller + 3 brokers (tools/kafka)."""
    name = "realkafka"
    label = "Apache Kafka 4.4.0 (KRaft)"

    def __init__(self, h):
        self.c = rk.cluster(h)
        self.bootstrap = self.c.bootstrap
        self.ports = set(self.c.broker_ports)

    def create_topic(self, topic, partitions, config=None):
        cfg = "min.insync.replicas=2"
        if config:
            cfg += " " + " ".join("%s=%s" % kv for kv in sorted(config.items()))
        rk.create_topic(self.c, topic, partitions=partitions, config=cfg)
        # Every broker must know the topic and agree on its leaders before a
        # client sees it: a client that asks a broker still behind gets
        # UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER, straight or not.
        rk.leaders(self.c, [topic], timeout=60)

    def leaders(self, topic):
        return {p: l for (t, p), (l, _) in rk.leaders(self.c, [topic]).items()}

    def delete_topic(self, topic):
        self.c.ctl("delete %s" % topic)

    def move_all(self, topic):
        """Moves each partition's leader to the next broker; returns ms spent."""
        ms = 0.0
        for p, leader in sorted(self.leaders(topic).items()):
            ms += self._move(topic, p, 1 + leader % 3)
        return ms

    def _move(self, topic, partition, target, bound_s=30.0):
        # On a loaded machine a follower can fall out of the ISR for a
        # while; the election then fails with PreferredLeaderNotAvailable
        # until it has caught up. Ask again until it has, within the bound.
        deadline = time.monotonic() + bound_s
        while True:
            try:
                return self.c.ctl("move %s %d %d" % (topic, partition, target))["ms"]
            except RuntimeError as e:
                if "PreferredLeaderNotAvailable" not in str(e) or time.monotonic() > deadline:
                    raise
            time.sleep(0.2)


class MockCluster:
    """librdkafka 2.15.1's mock cluster, 3 brokers (tools/mockcluster)."""
    name = "mock"
    label = "librdkafka 2.15.1 mock cluster"

    def __init__(self, h):
        self.c = h.start_cluster(brokers=3)
        # Share groups on the mock start at the earliest offset, as the
        # drivers set share.auto.offset.reset=earliest on a real cluster.
        self.c.cmd("share-offset-reset earliest")
        self.bootstrap = self.c.bootstrap
        self.ports = set(self.c.ports)

    def create_topic(self, topic, partitions, config=None):
        self.c.cmd("create %s %d 3" % (topic, partitions))

    def delete_topic(self, topic):
        pass  # the mock holds its topics in memory for the run's few minutes

    def leaders(self, topic):
        md = self.c.metadata([topic])
        return {p: d["leader"] for p, d in md["topics"][topic]["partitions"].items()}

    def move_all(self, topic):
        import time
        t0 = time.monotonic()
        for p, leader in sorted(self.leaders(topic).items()):
            self.c.move_leader(topic, p, 1 + leader % 3)
        return (time.monotonic() - t0) * 1000


def gate_ports(gate):
    return rk.gate_ports(gate)
