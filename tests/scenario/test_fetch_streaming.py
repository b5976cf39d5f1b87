"""Large Fetch responses streamed through epochgate as they arrive.

From limits.stream_fetch_min_bytes up, a Fetch response whose request is the
oldest the client is owed goes to the client while its bytes still arrive
(docs/streaming.md). These runs pin what a client must see all the same:
byte-identical responses where nothing needs a rewrite, the same records
for kcat (librdkafka) and kafka-python as from the broker directly, and,
across a leader move, a NodeEndpoints tail that names epochgate's listener
at the broker's length, with no upstream address in the bytes; librdkafka
2.15.1 consuming every record once and in order through padded and
trimmed tails; and a broker that stalls half way through a streamed
response is reported overdue like any unanswered request
(limits.upstream_overdue_ms), through tests/lib/epochgate_testlib/fault_relay.py in front
of the mock broker, while a client that stops reading a stream is not (the
broker owes nothing then).
"""

import hashlib
import json
import os
import random
import socket
import struct
import sys
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.fault_relay import FaultRelay, mark  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

STREAMED = "epochgate_responses_streamed_total"
OVERDUE = "epochgate_upstream_overdue_requests_total"
TAIL = "epochgate_stream_tail_total"


def _value(rnd, i, n):
    # Printable, so kcat's line output carries it whole.
    return ((b"%07d:" % i) + bytes(rnd.randrange(97, 123) for _ in range(997)) * (n // 997 + 1))[:n]


def _fill(gc, node, topic, partition, count, size, seed):
    rnd = random.Random(seed)
    for i in range(count):
        r = sl.produce_values(gc, node, topic, partition, [_value(rnd, i, size)], version=9)
        assert r["partitions"][0][2] == 0, r


def _recv_frames(sock, n, timeout=60.0, chunk=4096, pause=0.0):
    """`n` frames read in small chunks, as a slow client reads them."""
    data, frames = b"", []
    deadline = time.monotonic() + timeout
    while len(frames) < n and time.monotonic() < deadline:
        got = sock.recv(chunk)
        if not got:
            raise AssertionError("closed after %d frames" % len(frames))
        data += got
        fr, data = kw.split_frames(data)
        frames += fr
        if pause:
            time.sleep(pause)
    assert len(frames) == n, (len(frames), n)
    return frames


def _recv_exact(sock, n):
    out = b""
    while len(out) < n:
        got = sock.recv(min(8192, n - len(out)))
        if not got:
            raise AssertionError("closed after %d of %d bytes" % (len(out), n))
        out += got
    return out


def _recv_exact_frame(sock):
    """One frame, reading not a byte past its end."""
    prefix = _recv_exact(sock, 4)
    return prefix + _recv_exact(sock, struct.unpack(">i", prefix)[0])


def _mock_ports(cluster, brokers=3):
    return [cluster.broker_address(b)[1] for b in range(1, brokers + 1)]


def test_raw_fetch_every_version_byte_identical(h):
    # Fetch v9-v16 responses of about 1 MB, pipelined with Metadata, read in
    # 4 KiB chunks by a slow client: each one streamed and byte-identical to
    # the broker's own answer.
    topic = "stream-raw"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    md = gc.metadata_v12([topic])
    tid = bytes.fromhex(md["topics"][topic]["topic_id"])
    rnd = random.Random(1)
    for b in range(3):  # the mock serves one record batch a fetch: 300 KB ones
        r = sl.produce_values(gc, 1, topic, 0, [_value(rnd, i, 100000) for i in range(3)],
                              version=9)
        assert r["partitions"][0][2] == 0, r
    reqs, corr = [], 7000
    for version in (9, 11, 12, 13, 15, 16):
        for off in (0, 3):
            corr += 1
            t = tid if version >= 13 else topic
            reqs.append(("fetch", corr, sw.fetch_request(corr, t, [(0, -1, off)], version=version)))
        corr += 1
        reqs.append(("md", corr, kw.metadata_request(corr, [topic], version=7)))
    direct = sl.connect(cluster.broker_address(1), timeout=20)
    h.on_close(direct.close)
    expected = {}
    for kind, c, f in reqs:
        if kind == "fetch":
            direct.send(f)
            expected[c] = direct.recv_frame(timeout=20)
            assert len(expected[c]) > 250000, len(expected[c])
    before = sl.scrape(gate)
    s = socket.create_connection(gc.brokers[1], timeout=30)
    h.on_close(s.close)
    s.sendall(b"".join(f for _, _, f in reqs))
    frames = _recv_frames(s, len(reqs), chunk=4096, pause=0.0002)
    for (kind, c, _), got in zip(reqs, frames):
        assert kw.frame_correlation_id(got, False) == c, (kind, c)
        if kind == "fetch":
            assert got == expected[c], (c, len(got), len(expected[c]))
    after = sl.scrape(gate)
    streamed = sl.delta(after, before, STREAMED, api="fetch")
    h.note("streamed %d of %d fetches" % (streamed, len(expected)))
    assert streamed == len(expected), streamed


def test_streaming_off_reads_whole(h):
    # limits.stream_fetch_min_bytes: 0 keeps every response on the
    # whole-frame path; the bytes are the same.
    topic = "stream-off"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    gate = sl.start_gate(h, cluster, config="limits:\n  stream_fetch_min_bytes: 0\n")
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    _fill(gc, 1, topic, 0, 4, 100000, 2)
    f = sw.fetch_request(gc.next_corr(), topic, [(0, -1, 0)], version=12)
    direct = sl.connect(cluster.broker_address(1), timeout=20)
    h.on_close(direct.close)
    direct.send(f)
    want = direct.recv_frame(timeout=20)
    before = sl.scrape(gate)
    got = gc.exchange(f, 1, timeout=20)
    after = sl.scrape(gate)
    assert got == want
    assert sl.delta(after, before, STREAMED, api="fetch") == 0


def _kcat_consume(h, bootstrap, topic, count):
    out = h.kcat(["-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
                  "-c", str(count), "-f", "%p %o %S %s\n",
                  "-X", "fetch.message.max.bytes=2097152"], timeout=120)
    lines = [l for l in out.stdout.splitlines() if l]
    rows = []
    for l in lines:
        p, o, n, v = l.split(" ", 3)
        assert int(n) == len(v), (p, o, n, len(v))
        rows.append((int(p), int(o), hashlib.sha256(v.encode()).hexdigest()))
    return sorted(rows)


def _produce_kcat(h, bootstrap, topic, count, size, seed):
    # Keyed, so the records spread over the partitions evenly and stay
    # within what the mock retains of each.
    rnd = random.Random(seed)
    lines = b"\n".join(b"%d\t" % i + _value(rnd, i, size) for i in range(count)) + b"\n"
    h.kcat(["-b", bootstrap, "-P", "-t", topic, "-K", "\t", "-X", "message.max.bytes=2000000"],
           input=lines, timeout=120)


def test_kcat_consume_matches_direct(h):
    # kcat (librdkafka) reads about 14 MB over 3 brokers through epochgate:
    # the same partitions, offsets and values as reading the brokers directly,
    # most Fetch responses streamed.
    topic = "stream-kcat"
    cluster = h.start_cluster(3, ["%s:6:1" % topic])
    gate = sl.start_gate(h, cluster)
    _produce_kcat(h, cluster.bootstrap, topic, 1800, 8000, 3)
    direct = _kcat_consume(h, cluster.bootstrap, topic, 1800)
    before = sl.scrape(gate)
    through = _kcat_consume(h, gate.bootstrap, topic, 1800)
    after = sl.scrape(gate)
    assert len(direct) == 1800, len(direct)
    assert through == direct
    streamed = sl.delta(after, before, STREAMED, api="fetch")
    h.note("kcat: %d streamed responses" % streamed)
    assert streamed > 0


KAFKA_PYTHON = r"""
import hashlib, json, sys, time
from kafka import KafkaConsumer, TopicPartition
bootstrap, topic, parts, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                  max_partition_fetch_bytes=2097152, fetch_max_bytes=8388608,
                  request_timeout_ms=30000, consumer_timeout_ms=20000)
tps = [TopicPartition(topic, p) for p in range(parts)]
c.assign(tps)
c.seek_to_beginning(*tps)
rows = []
deadline = time.monotonic() + 90
while len(rows) < count and time.monotonic() < deadline:
    for tp, msgs in c.poll(timeout_ms=1000).items():
        for m in msgs:
            rows.append((m.partition, m.offset, hashlib.sha256(m.value).hexdigest()))
c.close()
print(json.dumps(sorted(rows)))
"""


def _kafka_python_consume(h, bootstrap, topic, parts, count):
    try:
        import kafka  # noqa: F401
    except ImportError:
        raise harness.Skip("python3-kafka not installed")
    r = h.run([harness.TEST_PYTHON, "-c", KAFKA_PYTHON, bootstrap, topic, str(parts), str(count)],
              timeout=150, name="kafka-python")
    return [tuple(x) for x in json.loads(r.stdout.strip().splitlines()[-1])]


def test_librdkafka_2_15_consumer_group_streamed(h):
    # librdkafka 2.15.1 (Fetch v16, flexible versions) produces 1200 keyed
    # records of 8 KB (about 1.6 MB a partition, within what the mock
    # retains) and reads them back in a consumer group through epochgate:
    # each exactly once and in order per partition (epochgate-rdkafka-check
    # accounts for every one), over streamed responses.
    topic = "stream-rdk"
    cluster = h.start_cluster(3, ["%s:6:1" % topic])
    gate = sl.start_gate(h, cluster)
    before = sl.scrape(gate)
    s = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", topic, "--messages", "1200",
                         "--partitions-keyed", "--message-size", "8000",
                         "--consume-group", "g-stream"])
    after = sl.scrape(gate)
    assert s["passed"], s
    streamed = sl.delta(after, before, STREAMED, api="fetch")
    h.note("librdkafka 2.15.1: %d streamed responses" % streamed)
    assert streamed > 0


def test_kafka_python_consume_matches_direct(h):
    # kafka-python (its own protocol code, pre-flexible Fetch versions)
    # reads the same records through epochgate as directly.
    topic = "stream-kpy"
    cluster = h.start_cluster(2, ["%s:4:1" % topic])
    gate = sl.start_gate(h, cluster)
    _produce_kcat(h, cluster.bootstrap, topic, 1200, 9000, 4)
    direct = _kafka_python_consume(h, cluster.bootstrap, topic, 4, 1200)
    before = sl.scrape(gate)
    through = _kafka_python_consume(h, gate.bootstrap, topic, 4, 1200)
    after = sl.scrape(gate)
    assert len(direct) == 1200, len(direct)
    assert through == direct
    streamed = sl.delta(after, before, STREAMED, api="fetch")
    h.note("kafka-python: %d streamed responses" % streamed)
    assert streamed > 0


def _leader_move_fetch(h, advertise):
    """Four partitions led by broker 1 hold about 300 KB each; partition 3
    moves to broker 2; a Fetch v16 at the epochs the client knew goes to
    broker 1 directly and through epochgate (advertising `advertise`), which
    serves 0-2 and answers 3 with NOT_LEADER_OR_FOLLOWER, CurrentLeader and
    NodeEndpoints (the mock's KIP-951 answer). Returns (through epochgate,
    direct, parsed through, parsed direct, metrics before, after, gate
    client, cluster, topic id)."""
    topic = "stream-move"
    cluster = h.start_cluster(3, ["%s:4:3" % topic])
    for p in range(4):
        cluster.cmd("leader %s %d 1" % (topic, p))
    gate = sl.start_gate(h, cluster, args=["--advertise-host", advertise])
    gc = sl.GateClient(h, gate)
    md = gc.metadata_v12([topic])
    t = md["topics"][topic]
    tid = bytes.fromhex(t["topic_id"])
    epochs = {p: t["partitions"][p]["leader_epoch"] for p in range(4)}
    for p in range(4):
        rnd = random.Random(10 + p)
        r = sl.produce_values(gc, 1, topic, p, [_value(rnd, i, 100000) for i in range(3)], version=9)
        assert r["partitions"][0][2] == 0, r
    cluster.move_leader(topic, 3, 2)
    fetch = sw.fetch_request(gc.next_corr(), tid, [(p, epochs[p], 0) for p in range(4)],
                             version=16)
    direct = sl.connect(cluster.broker_address(1), timeout=20)
    h.on_close(direct.close)
    direct.send(fetch)
    want = direct.recv_frame(timeout=20)
    wanted = sw.parse_fetch_response(want, 16)
    moved = wanted["partitions"][(tid, 3)]
    if moved["error"] == 0 or not wanted["node_endpoints"]:
        raise harness.Skip("the mock answered the moved partition without a KIP-951 hint: %r"
                           % (moved,))
    before = sl.scrape(gate)
    s = socket.create_connection(gc.brokers[1], timeout=30)
    h.on_close(s.close)
    s.sendall(fetch)
    got = _recv_exact_frame(s)
    after = sl.scrape(gate)
    moved_through = sw.parse_fetch_response(got, 16)["partitions"][(tid, 3)]
    # The view learned the move from the streamed response (before anything
    # else could teach it).
    sl.wait_view(gate, topic, 3, 2, moved_through["current_leader"][1], timeout=5)
    # The connection stays in step: the next response follows the streamed
    # one exactly where its size prefix said it ends.
    corr = gc.next_corr()
    s.sendall(kw.metadata_request(corr, [topic], version=7))
    nxt = _recv_exact_frame(s)
    assert kw.frame_correlation_id(nxt, False) == corr, nxt[:16]
    resp = sw.parse_fetch_response(got, 16)
    h.note("direct endpoints %r, through epochgate %r" % (wanted["node_endpoints"],
                                                          resp["node_endpoints"]))
    assert sl.delta(after, before, STREAMED, api="fetch") == 1
    # Same length: the size prefix went out first. Every partition as the
    # broker sent it, CurrentLeader included.
    assert len(got) == len(want), (len(got), len(want))
    assert got[:4] == want[:4]
    assert resp["partitions"] == wanted["partitions"]
    for p in range(3):
        assert len(resp["partitions"][(tid, p)]["records"]) > 250000, p
    assert moved["current_leader"][0] == 2, moved
    # No upstream address in the bytes after the last records.
    tail = got[-120:]
    for port in _mock_ports(cluster):
        assert struct.pack(">i", port) not in tail, port
    return resp, before, after, gc


def test_leader_move_streamed_endpoints_same_length(h):
    # epochgate's address as long as the broker's: rewritten in place.
    resp, before, after, gc = _leader_move_fetch(h, "127.0.0.1")
    assert resp["node_endpoints"][2][:2] == gc.brokers[2], resp["node_endpoints"]
    assert sl.delta(after, before, TAIL, reason="padded") == 0


def test_leader_move_streamed_endpoints_padded(h):
    # "127.1" is shorter: the rewritten NodeEndpoints is padded with an
    # unknown tagged field to the broker's length.
    resp, before, after, gc = _leader_move_fetch(h, "127.1")
    assert gc.brokers[2][0] == "127.1", gc.brokers
    assert resp["node_endpoints"][2][:2] == gc.brokers[2], resp["node_endpoints"]
    assert sl.delta(after, before, TAIL, reason="padded") == 1


def test_leader_move_streamed_endpoints_dropped(h):
    # A longer host does not fit: the endpoint is left out (CurrentLeader
    # stays), never sent with the broker's address.
    resp, before, after, gc = _leader_move_fetch(h, "127.000.000.001")
    assert resp["node_endpoints"] == {}, resp["node_endpoints"]
    assert sl.delta(after, before, TAIL, reason="endpoints_dropped") == 1


def test_librdkafka_consumes_across_leader_moves(h):
    # kcat reads 6 partitions while their leaders move every 300 ms: every
    # record arrives, the same as directly, through streamed responses.
    topic = "stream-moves"
    cluster = h.start_cluster(3, ["%s:6:3" % topic])
    gate = sl.start_gate(h, cluster)
    _produce_kcat(h, cluster.bootstrap, topic, 2400, 8000, 5)
    direct = _kcat_consume(h, cluster.bootstrap, topic, 2400)
    import threading
    stop = threading.Event()

    def mover():
        rnd = random.Random(6)
        while not stop.is_set():
            p = rnd.randrange(6)
            leader = cluster.partition(topic, p)["leader"]
            cluster.move_leader(topic, p, 1 + leader % 3)
            stop.wait(0.3)

    th = threading.Thread(target=mover, daemon=True)
    before = sl.scrape(gate)
    th.start()
    try:
        through = _kcat_consume(h, gate.bootstrap, topic, 2400)
    finally:
        stop.set()
        th.join(timeout=10)
    after = sl.scrape(gate)
    assert through == direct
    h.note("streamed %d, tail %s" % (sl.delta(after, before, STREAMED, api="fetch"),
                                     {r: sl.delta(after, before, TAIL, reason=r)
                                      for r in ("padded", "endpoints_dropped")}))
    assert sl.delta(after, before, STREAMED, api="fetch") > 0



def _rdkafka_group_across_moves(h, advertise, reason):
    """librdkafka 2.15.1 (Fetch v16) produces 1200 keyed records of 4 KB to
    3 partitions led by broker 1, through epochgate advertising `advertise`,
    and reads them back in a consumer group. While it reads, partition 2
    moves to broker 2: the group's next Fetch to broker 1 comes back with
    partitions 0 and 1's records, then partition 2's NOT_LEADER_OR_FOLLOWER
    or FENCED_LEADER_EPOCH with CurrentLeader, then NodeEndpoints: streamed,
    so that tail is rewritten at the broker's length (`reason`). Returns the
    rdkafka-check summary and the metric deltas."""
    import threading
    topic = "stream-tail"
    cluster = h.start_cluster(3, ["%s:3:3" % topic])
    for p in range(3):
        cluster.cmd("leader %s %d 1" % (topic, p))
    # Answers 30 ms late, record batches of 20 records (80 KB: linger.ms
    # lets each fill; the mock serves a partition one batch a Fetch): the
    # group reads in about 20 rounds of 240 KB responses, so partitions 0
    # and 1 still have records when 2 moves.
    for b in (1, 2, 3):
        cluster.cmd("rtt %d 30" % b)
    gate = sl.start_gate(h, cluster, args=["--advertise-host", advertise])
    before = sl.scrape(gate)
    stop = threading.Event()
    moves = []

    def mover():
        # The first streamed response: the group reads.
        while not stop.wait(0.02):
            if sl.delta(sl.scrape(gate), before, STREAMED, api="fetch") > 0:
                cluster.move_leader(topic, 2, 2)
                moves.append(2)
                return

    log = os.path.join(h.workdir, "tail.rdkafka.log")
    bg = h.rdkafka_check_async(["--bootstrap", gate.bootstrap, "--topic", topic,
                                "--messages", "1200", "--partitions-keyed",
                                "--message-size", "4000", "--consume-group", "g-tail",
                                "-X", "linger.ms=100", "-X", "batch.num.messages=20",
                                "--debug", "broker", "--log-file", log])
    th = threading.Thread(target=mover, daemon=True)
    th.start()
    try:
        s = bg.result(90)
    finally:
        stop.set()
        th.join(timeout=10)
    after = sl.scrape(gate)
    deltas = {r: sl.delta(after, before, TAIL, reason=r)
              for r in ("padded", "endpoints_dropped", "hint_not_backfilled")}
    streamed = sl.delta(after, before, STREAMED, api="fetch")
    h.note("advertise %s: %d leader moves, %d streamed responses, tail %s, check %s" % (
        advertise, len(moves), streamed, deltas,
        {k: s.get(k) for k in ("produced", "acked", "consumed", "duplicates", "missing",
                               "out_of_order", "misplaced", "seconds")}))
    # Every record once, in order per partition, at the offset it was
    # acknowledged at (epochgate-rdkafka-check's ledger).
    assert s["passed"], s
    assert s["produced"] == s["acked"] == 1200, s
    assert s["missing"] == s["duplicates"] == s["out_of_order"] == s["misplaced"] == 0, s
    # librdkafka read every rewritten tail: a tail it could not parse is a
    # "Protocol parse failure" (logged whatever the debug contexts), one
    # epochgate could not fit closes the connection under it
    # ("Disconnected"), and it reached brokers only through epochgate's
    # listeners (no upstream address in a tail).
    with open(log, errors="replace") as f:
        lines = f.readlines()
    parse_failures = [l for l in lines if "parse failure" in l.lower()]
    assert not parse_failures, parse_failures[:3]
    disconnects = [l for l in lines if "Disconnected" in l]
    assert not disconnects, disconnects[:3]
    h.assert_only_front_connections(log, cluster)
    assert moves == [2], "the group never read a streamed response"
    assert streamed > 0, streamed
    assert deltas[reason] > 0, (reason, deltas)
    return s, deltas


def test_librdkafka_group_consumes_through_padded_fetch_tails(h):
    # "127.1" is shorter than the mock's 127.0.0.1: the rewritten
    # NodeEndpoints is padded with an unknown tagged field, which librdkafka
    # must skip.
    _rdkafka_group_across_moves(h, "127.1", "padded")


def test_librdkafka_group_consumes_through_trimmed_fetch_tails(h):
    # "127.000.000.001" is longer: endpoints are left out of the tail, and
    # librdkafka finds the new leader from CurrentLeader and Metadata.
    _rdkafka_group_across_moves(h, "127.000.000.001", "endpoints_dropped")


test_librdkafka_group_consumes_through_padded_fetch_tails.timeout = 120
test_librdkafka_group_consumes_through_trimmed_fetch_tails.timeout = 120

def test_large_fetch_behind_a_rerouted_produce_waits_for_its_answer(h):
    # A Produce that epochgate reroutes to a slow leader, then a large Fetch
    # and a Metadata request pipelined on the same connection: the broker
    # answers the Fetch first, but the client must get the three answers in
    # its request order, the Fetch whole (it may not stream ahead of the
    # Produce's answer).
    cluster = h.start_cluster(3, ["rr:3:3"])
    for p, b in ((0, 1), (1, 1), (2, 2)):
        cluster.cmd("leader rr %d %d" % (p, b))
    gate = sl.start_gate(h, cluster, config="""
policy:
  rules:
    - topics: "rr"
      mode: enforce
      reroute: true
""")
    gc = sl.GateClient(h, gate)
    parts = gc.metadata(["rr"])["topics"]["rr"]["partitions"]
    for p in range(3):
        sl.wait_view(gate, "rr", p, parts[p]["leader"], parts[p]["leader_epoch"])
    _fill(gc, 1, "rr", 0, 3, 100000, seed=3)
    cluster.cmd("rtt 2 600")
    before = sl.scrape(gate)
    s = socket.create_connection(gc.brokers[1], timeout=30)
    h.on_close(s.close)
    pc, fc, mc = 0x1111, 0x2222, 0x3333
    produce = sw.produce_request(pc, "rr", [(2, kw.record_batch([b"x" * 100]))], acks=1, version=9)
    fetch = sw.fetch_request(fc, "rr", [(0, -1, 0)], version=12)
    md = kw.metadata_request(mc, ["rr"], version=7)
    s.settimeout(30)
    s.sendall(produce + fetch + md)
    got = [_recv_exact_frame(s) for _ in range(3)]
    assert [kw.frame_correlation_id(g, False) for g in got] == [pc, fc, mc]
    assert len(got[1]) > 65536  # past limits.stream_fetch_min_bytes: it would stream
    after = sl.scrape(gate)
    assert after.sum("epochgate_reroutes_total", result="delivered") >= 1
    assert sl.delta(after, before, STREAMED, api="fetch") == 0


def test_broker_stalling_mid_stream_is_reported_overdue(h):
    # The broker (a relay in front of the mock) sends half of a ~100 KB
    # Fetch response and then nothing, its connection open. The client has
    # the size prefix and part of the body, streamed; the request is still
    # owed, so limits.upstream_overdue_ms past the Fetch's own max_wait_ms it
    # is counted once, as a request that is not answered at all would be,
    # and the connection stays open (the overdue contract: the client's own
    # deadlines decide).
    overdue_ms, max_wait_ms, sweep_s, slack_s = 300, 100, 1.0, 3.0
    topic = "stall"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    relay = FaultRelay(cluster.broker_address(1), fault="stall")
    h.on_close(relay.close)
    gate = sl.start_gate(h, cluster, upstream=relay.address,
                         config="limits:\n  upstream_overdue_ms: %d\n" % overdue_ms)
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    _fill(gc, 1, topic, 0, 3, 100000, seed=4)  # through node 1's listener: no relay
    client = sl.connect(gate.bootstrap_address, timeout=20)  # bootstrap: through the relay
    h.on_close(client.close)
    before = sl.scrape(gate)
    corr = mark(0x5151)
    start = time.monotonic()
    client.send(sw.fetch_request(corr, topic, [(0, -1, 0)], version=12, max_wait_ms=max_wait_ms))
    bound_s = (max_wait_ms + overdue_ms) / 1000.0 + sweep_s + slack_s
    got = b""
    counted_s = None
    client.sock.settimeout(0.1)
    while time.monotonic() - start < bound_s + 1.0:
        try:
            chunk = client.sock.recv(1 << 16)
            assert chunk, "closed after %d bytes" % len(got)  # the connection stays open
            got += chunk
        except socket.timeout:
            pass
        if counted_s is None and sl.delta(sl.scrape(gate), before, OVERDUE, api="fetch") >= 1:
            counted_s = time.monotonic() - start
        if counted_s is not None and time.monotonic() - start > counted_s + 0.5:
            break
    after = sl.scrape(gate)
    size = struct.unpack(">i", got[:4])[0] if len(got) >= 4 else None
    h.note("client got %d of %s bytes; overdue counted after %s s (bound %.1f s)"
           % (len(got), size and size + 4, counted_s and round(counted_s, 2), bound_s))
    assert relay.faults_applied == 1
    # Past limits.stream_fetch_min_bytes, and cut short: the client has part of it.
    assert size is not None and size + 4 >= 65536 and 8 < len(got) < size + 4, (len(got), size)
    assert struct.unpack(">i", got[4:8])[0] == corr
    assert sl.delta(after, before, STREAMED, api="fetch") == 1
    assert counted_s is not None, "a stream stalled mid-frame was never counted overdue"
    assert counted_s >= (max_wait_ms + overdue_ms) / 1000.0 - 0.05, counted_s
    assert counted_s <= bound_s, counted_s
    assert sl.delta(after, before, OVERDUE, api="fetch") == 1  # once, not per sweep


def test_client_that_stops_reading_a_stream_is_not_the_broker_overdue(h):
    # The control: the broker sends a 5 MB Fetch response at once, but the
    # client (a 4 KiB receive buffer) stops reading after 1000 bytes. Flow
    # control stops reading the broker meanwhile; the broker owes nothing,
    # so however long the client waits, nothing is counted overdue, and the
    # whole response arrives once the client reads again.
    overdue_ms, max_wait_ms, sweep_s = 300, 100, 1.0
    topic = "stopped"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    gate = sl.start_gate(h, cluster, config="limits:\n  upstream_overdue_ms: %d\n" % overdue_ms)
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    direct = sl.connect(cluster.broker_address(1), timeout=30)
    h.on_close(direct.close)
    values = [bytes([97 + i]) * 1000000 for i in range(5)]
    direct.send(sw.produce_request(9, topic, [(0, kw.record_batch(values))], acks=1, version=9))
    assert sw.parse_produce_response(direct.recv_frame(timeout=30), 9)["partitions"][0][2] == 0
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect(gc.brokers[1])
    h.on_close(s.close)
    before = sl.scrape(gate)
    corr = 0x5252
    s.sendall(sw.fetch_request(corr, topic, [(0, -1, 0)], version=12, max_wait_ms=max_wait_ms))
    head = _recv_exact(s, 1000)
    time.sleep((max_wait_ms + overdue_ms) / 1000.0 + 2 * sweep_s + 0.5)
    stalled = sl.scrape(gate)
    size = struct.unpack(">i", head[:4])[0]
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)  # reads on, fast
    rest = _recv_exact(s, size + 4 - len(head))
    after = sl.scrape(gate)
    h.note("%d byte response, client paused %.1f s after 1000 bytes: overdue %d"
           % (size + 4, (max_wait_ms + overdue_ms) / 1000.0 + 2 * sweep_s + 0.5,
              sl.delta(after, before, OVERDUE, api="fetch")))
    assert size > 5000000 and struct.unpack(">i", head[4:8])[0] == corr
    assert sl.delta(stalled, before, STREAMED, api="fetch") == 1
    assert sl.delta(after, before, OVERDUE, api="fetch") == 0
    assert rest.count(b"e" * 1000) >= 999  # the last record arrived whole


if __name__ == "__main__":
    harness.main(globals())
