"""Divergence after an unclean leader election on a real Apache Kafka 4.4.0
cluster reaches the client through epochgate exactly as it does directly.

The staging (one topic, replicas [1, 2], min.insync.replicas=1, ELR on as
4.x formats it):
  1. records 0-4 written with both replicas in sync (leader epoch e0);
  2. follower 2 stopped; records 5-9 acknowledged by leader 1 alone (acks=1);
  3. every consumer reads 0-9; leader 1 stopped: the partition has no
     leader (ISR empty, ELR [1]);
  4. broker 2 started and elected by an UNCLEAN election (the Admin API, as
     kafka-leader-election --election-type unclean): epoch e1 > e0, its log
     ends at 5, so records 5-9 are lost;
  5. three new records written to 2 (offsets 5-7 again); broker 1 started,
     truncates to 5 and rejoins the ISR; two more records (offsets 8-9).

Four Java consumers (kafka-clients 4.4.0, DivergenceWatch.java) poll the
partition through all of it, two straight at the cluster and two through
epochgate, one of each with auto.offset.reset=earliest (the client moves
itself to the first divergent offset) and one with none (poll() raises
LogTruncationException with that offset; the application seeks to it).
Asserted: each epochgate consumer saw the same records (offset, leader
epoch, value) and the same LogTruncationException as its direct twin, and
the staging diverged as intended. The Java consumer sends no
LastFetchedEpoch in its Fetch (kafka-clients' AbstractFetch leaves it
empty): it detects the divergence with OffsetForLeaderEpoch after it learns
the new epoch. So a raw Fetch v12 that carries LastFetchedEpoch e0 at
offset 10 is also sent to broker 2 directly and through epochgate: both must
answer DivergingEpoch (e0, 5), which epochgate must neither drop nor turn
into a fencing error.

librdkafka 2.15.1 consumers (python3-confluent-kafka on the build's
librdkafka, rdkafka_watch.py) poll beside them, auto.offset.reset earliest
and error (the application assigns the partition again from its beginning
on the _AUTO_OFFSET_RESET error): each epochgate one must read what its
direct twin read, get the same reset errors, and read the new records.

Not covered: kafka-python's consumer in the same staging.

    PYTHONPATH=tests/lib /usr/bin/python3 tests/realkafka/test_unclean_divergence.py --build-dir build
"""

import json
import os
import sys
import time

from epochgate_testlib import realkafka_lib as rk  # noqa: E402
from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.realkafka_lib import harness, kafka_cluster  # noqa: E402

TOPIC = "unclean-div"
OLD, NEW = 1, 2  # the leader whose acks=1 records are lost, the replica elected uncleanly
WAIT = 60.0      # bound of every wait on the cluster or the consumers
JAVA = ("direct-earliest", "direct-none", "gate-earliest", "gate-none")
RDKAFKA = ("rd-direct-earliest", "rd-direct-error", "rd-gate-earliest", "rd-gate-error")


def _specs(names, c, gate):
    """NAME@BOOTSTRAP@RESET;...: "direct" names go straight to the cluster,
    the others through epochgate; RESET is the name's last word."""
    return ";".join("%s@%s@%s" % (name, c.bootstrap if "direct" in name else gate.bootstrap,
                                  name.rsplit("-", 1)[1]) for name in names)


class Peer:
    """A watcher process: one command a line, one JSON answer each."""

    def __init__(self, h, name, argv):
        self.proc = harness.Process(name, argv, h.workdir, stdin=True)
        h.on_close(self.proc.stop)
        self.hello = self.ask(None, 60)
        assert self.hello.get("ready"), "%s did not start: %s" % (name, self.hello)

    def ask(self, command, timeout=WAIT):
        if command is not None:
            self.proc.proc.stdin.write((command + "\n").encode())
            self.proc.proc.stdin.flush()
        reply = json.loads(self.proc.read_line(timeout))
        assert command is None or reply.get("ok"), (command, reply)
        return reply


class Watch:
    """DivergenceWatch.java (the Java consumers and the producer) and, when
    the build has librdkafka 2.15.1, rdkafka_watch.py beside it."""

    def __init__(self, h, c, gate):
        classes = kafka_cluster.compile_java(rk.client_prefix(), [
            os.path.join(rk.HERE, "DivergenceWatch.java"), os.path.join(rk.HERE, "EgDriver.java")])
        argv, _ = rk.java_argv(h, c, "DivergenceWatch", [
            "--topic", TOPIC, "--producer-bootstrap", c.bootstrap, "--consumers", _specs(JAVA, c, gate)],
            "watch", classes)
        self.java = Peer(h, "watch", argv)
        self.peers = [self.java]
        self.names = list(JAVA)
        lib = _librdkafka_lib(h)
        if lib is None:
            h.note("no EPOCHGATE_LIBRDKAFKA_PREFIX in the build: librdkafka consumers skipped")
            return
        self.peers.append(Peer(h, "rdkafka-watch", [
            "env", "LD_LIBRARY_PATH=" + lib, sys.executable, os.path.join(rk.HERE, "rdkafka_watch.py"),
            "--topic", TOPIC, "--consumers", _specs(RDKAFKA, c, gate)]))
        self.names += RDKAFKA
        h.note("librdkafka %s consumers beside the Java ones" % self.peers[-1].hello["librdkafka"])

    def report(self):
        out = {}
        for p in self.peers:
            out.update(p.ask("report")["consumers"])
        return out

    def produce(self, n, prefix):
        return self.java.ask("produce %d %s" % (n, prefix), timeout=90)["offsets"]

    def wait_read(self, want, what):
        """Waits until every consumer's last record is `want` (offset, value)."""
        def done():
            r = self.report()
            return r if all(r[n]["records"] and (r[n]["records"][-1][0], r[n]["records"][-1][-1]) == want
                            for n in self.names) else None
        try:
            return harness.wait_until(done, WAIT, interval=0.2, what=what)
        except AssertionError:
            raise AssertionError("%s; consumers saw %s" % (what, self.report()))


def _librdkafka_lib(h):
    """The lib directory of the librdkafka the build's peers link, from the
    build's CMake cache, or None."""
    try:
        with open(os.path.join(h.build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("EPOCHGATE_LIBRDKAFKA_PREFIX:"):
                    lib = os.path.join(line.split("=", 1)[1].strip(), "lib")
                    return lib if os.path.isdir(lib) else None
    except OSError:
        pass
    return None


def _partition(c):
    return c.ctl("describe " + TOPIC)["partitions"][0]


def _wait_partition(c, pred, what):
    return harness.wait_until(lambda: (lambda p: p if pred(p) else None)(_partition(c)), WAIT,
                              interval=0.2, what=what)


def _diverging_fetch(address, epoch, last_fetched_epoch, offset):
    """A Fetch v12 of partition 0 at `offset` whose LastFetchedEpoch is
    `last_fetched_epoch`: the partition's answer."""
    conn = sl.connect(address, timeout=15)
    try:
        conn.send(sw.fetch_request(0x4456, TOPIC, [(0, epoch, offset, last_fetched_epoch)], version=12))
        return sw.parse_fetch_response(conn.recv_frame(), version=12)["partitions"][(TOPIC, 0)]
    finally:
        conn.close()


def _gate_node_address(gate, node):
    """epochgate's listener for `node`, as a client finds it in Metadata."""
    conn = sl.connect(gate.bootstrap_address)
    try:
        conn.send(sw.metadata_request_v12(0x4457, [TOPIC]))
        host, port = sw.parse_metadata_response_v12(conn.recv_frame())["brokers"][node]
    finally:
        conn.close()
    return host, port


def test_divergence_after_unclean_election_reaches_the_client_as_directly(h):
    c = rk.cluster(h)
    gate = h.start_gate(c.bootstrap)
    c.ctl("create %s 1 %d:%d min.insync.replicas=1" % (TOPIC, OLD, NEW))
    c.wait_isr(TOPIC, replicas=2)
    watch = Watch(h, c, gate)

    assert watch.produce(5, "clean") == list(range(5))
    (_, e_clean), = rk.leaders(c, [TOPIC]).values()
    c.stop_broker(NEW)
    _wait_partition(c, lambda p: p["isr"] == [OLD] and p["leader"] == OLD, "ISR [%d]" % OLD)
    assert watch.produce(5, "acked-by-%d-alone" % OLD) == list(range(5, 10))
    (_, e0), = rk.leaders(c, [TOPIC]).values()
    watch.wait_read((9, "acked-by-%d-alone-4" % OLD), "every consumer at offset 9")

    t = time.monotonic()
    c.stop_broker(OLD)
    down = _wait_partition(c, lambda p: p["leader"] == -1, "no leader once broker %d stopped" % OLD)
    h.note("broker %d stopped: leader %d, isr %s, elr %s" % (OLD, down["leader"], down["isr"], down["elr"]))
    c.start_broker(NEW)
    r = c.ctl("elect-unclean %s 0" % TOPIC)
    assert r["leader"] == NEW, r
    (leader, e1), = rk.leaders(c, [TOPIC]).values()
    assert leader == NEW and e1 > e0, (leader, e1, e0)
    h.note("unclean election of broker %d: epoch %d -> %d, %.1f s after broker %d stopped" % (
        NEW, e0, e1, time.monotonic() - t, OLD))
    assert watch.produce(3, "written-to-%d" % NEW) == [5, 6, 7]

    # The wire: broker 2's own DivergingEpoch answer, directly and through
    # epochgate once its view has the new epoch.
    rk.wait_view_matches(gate, c, [TOPIC], WAIT)
    direct = _diverging_fetch(c.broker_address(NEW), e1, e0, 10)
    via = _diverging_fetch(_gate_node_address(gate, NEW), e1, e0, 10)
    assert direct["error"] == sw.NONE and direct["diverging_epoch"] == (e0, 5), direct
    assert (via["error"], via["diverging_epoch"], via["high_watermark"]) == \
        (direct["error"], direct["diverging_epoch"], direct["high_watermark"]), (via, direct)
    h.note("Fetch v12 at offset 10, LastFetchedEpoch %d: DivergingEpoch %s directly and through epochgate" % (
        e0, via["diverging_epoch"]))

    watch.wait_read((7, "written-to-%d-2" % NEW), "every consumer at the new offset 7")
    c.start_broker(OLD)
    c.wait_isr(TOPIC, replicas=2)
    assert watch.produce(2, "after-%d-returned" % OLD) == [8, 9]
    seen = watch.wait_read((9, "after-%d-returned-1" % OLD), "every consumer at the new offset 9")

    expect = ([[o, e_clean, "clean-%d" % o] for o in range(5)]
              + [[o, e0, "acked-by-%d-alone-%d" % (OLD, o - 5)] for o in range(5, 10)]
              + [[o, e1, "written-to-%d-%d" % (NEW, o - 5)] for o in range(5, 8)]
              + [[o, e1, "after-%d-returned-%d" % (OLD, o - 8)] for o in range(8, 10)])
    truncations = {}
    for name in JAVA:
        s = seen[name]
        truncations[name] = [e for e in s["errors"] if e["error"] == "LogTruncationException"]
        others = sorted({e["error"] for e in s["errors"]} - {"LogTruncationException"})
        if others:
            h.note("%s also raised %s" % (name, others))
        assert s["records"] == expect, (name, s["records"])
    for reset in ("earliest", "none"):
        direct, via = seen["direct-" + reset], seen["gate-" + reset]
        assert via["records"] == direct["records"], (reset, via["records"], direct["records"])
        assert truncations["gate-" + reset] == truncations["direct-" + reset], (reset, truncations)
        assert sorted({e["error"] for e in via["errors"]}) == sorted({e["error"] for e in direct["errors"]}), \
            (reset, via["errors"], direct["errors"])
    assert truncations["direct-earliest"] == [], truncations
    assert truncations["direct-none"] == [{"error": "LogTruncationException", "fetch_offset": 10,
                                           "divergent_offset": 5, "divergent_epoch": e0}], truncations
    h.note("LogTruncationException (auto.offset.reset=none): %s, the same through epochgate" %
           truncations["gate-none"])
    _assert_rdkafka_as_directly(h, seen, watch.names, expect)


def _assert_rdkafka_as_directly(h, seen, names, expect):
    """librdkafka's consumers: each epochgate one read what its direct twin
    read and got the same reset errors; every consumer read the records
    written after the election, after a rewind."""
    written = [[o, v] for o, _, v in expect]
    for reset in ("earliest", "error"):
        if "rd-direct-" + reset not in names:
            return
        direct, via = seen["rd-direct-" + reset], seen["rd-gate-" + reset]
        resets = {k: [e for e in seen[k]["errors"] if e["error"] == "_AUTO_OFFSET_RESET"]
                  for k in ("rd-direct-" + reset, "rd-gate-" + reset)}
        for name in ("rd-direct-" + reset, "rd-gate-" + reset):
            records = seen[name]["records"]
            others = sorted({e["error"] for e in seen[name]["errors"]} - {"_AUTO_OFFSET_RESET"})
            h.note("%s: offsets %s; reset errors %s%s" % (
                name, [r[0] for r in records], [e["message"] for e in resets[name]],
                "; also %s" % others if others else ""))
            assert records[:10] == written[:10] and records[-5:] == written[-5:], (name, records)
            assert all(r in written for r in records), (name, records)
        assert via["records"] == direct["records"], (reset, via["records"], direct["records"])
        assert resets["rd-gate-" + reset] == resets["rd-direct-" + reset], (reset, resets)
    # With "error" the application is told, and of the truncation itself
    # (not an offset out of range): the staging reached librdkafka's check.
    assert [("log truncation detected" in e["message"]) for e in resets["rd-direct-error"]] == [True], resets


for _f in list(globals().values()):
    if callable(_f) and getattr(_f, "__name__", "").startswith("test_"):
        _f.timeout = 600

if __name__ == "__main__":
    harness.main(globals())
