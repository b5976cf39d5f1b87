"""What real Kafka 4.4.0 brokers put on the wire about leaders, and what
reaches a client through epochgate, frame by frame, with the same requests
sent straight at the cluster as the control:

- a Produce v10 sent to a follower: the real broker answers
  NOT_LEADER_OR_FOLLOWER with a KIP-951 CurrentLeader and NodeEndpoints
  naming the leader's upstream address. Through epochgate (observe mode, so
  the request reaches the broker) the hint must name the same leader and
  epoch at epochgate's own listener for it (counted as a rewritten hint);
  in enforce mode epochgate answers itself, with the same leader and epoch.
- a Fetch v16 at the current epoch sent to a follower: the real broker
  serves it (KIP-392 follower fetching; a v11+ Fetch always names a rack),
  and so must epochgate.
- a Fetch v16 carrying the previous leader epoch: the real leader answers
  FENCED_LEADER_EPOCH with a hint naming itself; through epochgate the
  client gets the same error and leader at epochgate's address (observe:
  the broker's hint rewritten; enforce: a stale_epoch fence from the real
  epochs).
- Metadata v12: same leaders and epochs both ways, only epochgate's ports.
- a sessionless Fetch v10 without an epoch (-1, as clients from before
  KIP-320 send) to the old leader, after a move epochgate has not learned
  yet: epochgate writes its view's (previous) epoch in, and the real broker
  answers FENCED_LEADER_EPOCH; the client, which sent no epoch, must get
  NOT_LEADER_OR_FOLLOWER, as straight at the cluster.
- a sessionless Fetch v16 without an epoch to the old leader, now a
  follower: straight at the cluster it is served (KIP-392). Through
  epochgate it must be served too, both before the view learned the move
  (the view still names that broker leader, so nothing is injected) and
  after (the view's new epoch is injected, which the follower holds too).
Every response frame received through epochgate is searched for any upstream
broker's host:port encoding; the direct frames must contain them (control).

The same cluster also has SASL_PLAINTEXT and SASL_SSL listeners, and serves
the SASL and TLS stories of sasl_cases.py (one cluster start for both).

    PYTHONPATH=tests/lib /usr/bin/python3 tests/realkafka/test_wire_hints.py --build-dir build
"""

import socket
import struct
import time

from epochgate_testlib import realkafka_lib as rk  # noqa: E402
from epochgate_testlib.realkafka_lib import harness, kw, sl, sw  # noqa: E402

rk.SECURITY = True
from sasl_cases import (test_sasl_ssl_passthrough_with_own_login,  # noqa: E402,F401
                        test_sasl_plaintext_passthrough_without_own_login,
                        test_sidecar_credentials_over_sasl_ssl)

NOT_LEADER = 6
FENCED = 74


def _upstream_patterns(c):
    # A broker address on the wire: host string, then the port as int32.
    return [(p, b"127.0.0.1" + struct.pack(">i", p)) for p in c.broker_ports]


def _leaks(frames, c):
    return sorted({p for f in frames for p, pat in _upstream_patterns(c) if pat in f})


class Direct:
    """Raw connections straight to the brokers (the control)."""

    def __init__(self, c):
        self.c = c
        self.conns = {}
        self.frames = []
        self.corr = 100

    def exchange(self, frame, node):
        if node not in self.conns:
            self.conns[node] = sl.connect(self.c.broker_address(node))
        self.conns[node].send(frame)
        out = self.conns[node].recv_frame(timeout=10)
        self.frames.append(out)
        return out

    def close(self):
        for x in self.conns.values():
            x.close()


class Gate(sl.GateClient):
    def __init__(self, h, gate):
        super().__init__(h, gate)
        self.frames = []

    def exchange(self, frame, node=None, timeout=10.0):
        out = super().exchange(frame, node, timeout)
        self.frames.append(out)
        return out


def _setup(h, mode, name=None):
    c = rk.cluster(h)
    topic = rk.create_topic(c, "wire-" + (name or mode), partitions=3)
    # Epoch 1, so that "the previous epoch" is 0 and not -1 (no epoch).
    c.ctl("move %s 0 2" % topic)
    gate = sl.start_gate(h, None, upstream=c.bootstrap,
                         config="policy:\n  default_mode: %s\n" % mode)
    g = Gate(h, gate)
    d = Direct(c)
    h.on_close(d.close)
    # The move returns once the admin client's describe shows broker 2
    # leading; the other brokers' metadata (and broker 2's own leadership)
    # may follow a moment later. The checks below need every broker settled.
    _wait_every_broker_names(d, c, topic, leader=2, epoch=1)
    md_gate = g.metadata_v12([topic])
    md_direct = sw.parse_metadata_response_v12(d.exchange(sw.metadata_request_v12(9, [topic]), 1))
    return c, topic, gate, g, d, md_gate, md_direct


def _wait_every_broker_names(d, c, topic, leader, epoch, timeout=30.0):
    """Waits until each broker's Metadata names `leader` at `epoch` or later
    for partition 0 of `topic`."""
    deadline = time.monotonic() + timeout
    corr = 0x5700
    while True:
        seen = {}
        for node in sorted(c.ports):
            corr += 1
            md = sw.parse_metadata_response_v12(d.exchange(sw.metadata_request_v12(corr, [topic]), node))
            seen[node] = _partition0(md, topic)
        if all(l == leader and e >= epoch for l, e in seen.values()):
            return
        if time.monotonic() > deadline:
            raise AssertionError("brokers' partition 0 leader/epoch after the move: %s" % seen)
        time.sleep(0.05)


def _partition0(md, topic):
    p = md["topics"][topic]["partitions"][0]
    return p["leader"], p["leader_epoch"]


def _produce(conn, node, topic, corr):
    frame = sw.produce_request(corr, topic, [(0, kw.record_batch([b"wire"]))], -1, 10)
    return sw.parse_produce_response(conn.exchange(frame, node), 10)


def _fetch(conn, node, topic_id, epoch, corr):
    frame = sw.fetch_request(corr, topic_id, [(0, epoch, 0)], version=16)
    return sw.parse_fetch_response(conn.exchange(frame, node), 16)


def _check_mode(h, mode):
    c, topic, gate, g, d, md_gate, md_direct = _setup(h, mode)
    leader, epoch = _partition0(md_direct, topic)
    assert _partition0(md_gate, topic) == (leader, epoch), (md_gate, md_direct)
    assert {p for _, p in md_gate["brokers"].values()} <= rk.gate_ports(gate)
    follower = 1 + leader % 3
    tid = bytes.fromhex(md_direct["topics"][topic]["topic_id"])
    before = sl.scrape(gate)

    # Produce v10 to a follower.
    pd, pg = _produce(d, follower, topic, 11), _produce(g, follower, topic, 12)
    (_, _, derr, _, dlead), (_, _, gerr, _, glead) = pd["partitions"][0], pg["partitions"][0]
    assert derr == NOT_LEADER and dlead == (leader, epoch), pd
    assert pd["node_endpoints"][leader][:2] == ("127.0.0.1", c.ports[leader]), pd
    assert gerr == NOT_LEADER and glead == (leader, epoch), pg
    assert pg["node_endpoints"][leader][:2] == tuple(g.brokers[leader]), (pg, g.brokers)

    # Fetch v16 (current epoch) to a follower: Kafka serves a consumer that
    # names a rack (any RackId, v11+; KIP-392) from a follower, so the real
    # broker answers without error. Through epochgate the client must see
    # what it sees direct.
    fd, fg = _fetch(d, follower, tid, epoch, 13), _fetch(g, follower, tid, epoch, 14)
    dp, gp = list(fd["partitions"].values())[0], list(fg["partitions"].values())[0]
    h.note("%s: Fetch v16 at the current epoch to follower %d: direct error %d, epochgate error %d %s" % (
        mode, follower, dp["error"], gp["error"], gp["current_leader"]))
    assert dp["error"] == 0, fd
    assert gp["error"] == dp["error"], (fd, fg)

    # Fetch with the previous epoch to the leader: FENCED_LEADER_EPOCH both
    # ways, with a hint naming the leader (the real broker names itself).
    fd, fg = _fetch(d, leader, tid, epoch - 1, 15), _fetch(g, leader, tid, epoch - 1, 16)
    dp, gp = list(fd["partitions"].values())[0], list(fg["partitions"].values())[0]
    assert dp["error"] == FENCED and dp["current_leader"] == (leader, epoch), fd
    assert fd["node_endpoints"][leader][:2] == ("127.0.0.1", c.ports[leader]), fd
    assert gp["error"] == FENCED and gp["current_leader"] == (leader, epoch), fg
    assert fg["node_endpoints"][leader][:2] == tuple(g.brokers[leader]), (fg, g.brokers)

    after = sl.scrape(gate)
    h.note("%s: leader %d epoch %d; epochgate %s" % (mode, leader, epoch, sl.fences_text(after)))
    direct_leaks = _leaks(d.frames, c)
    assert direct_leaks, "control: the direct answers never named an upstream address?"
    assert not _leaks(g.frames, c), "upstream addresses %s reached the client through epochgate" % _leaks(g.frames, c)
    return before, after


def _half_closed_exchange(h, address, count, cut_short):
    """Sends `count` whole requests (ApiVersions and Metadata v12 in turn)
    and, with `cut_short`, the first bytes of one more, then shuts down the
    writing side (shutdown(SHUT_WR)). Returns the correlation ids answered,
    in order, once the peer closed."""
    conn = sl.connect(address)
    h.on_close(conn.close)
    frames = b"".join(kw.api_versions_request(0x4800 + i, 0) if i % 2 == 0
                      else sw.metadata_request_v12(0x4800 + i, []) for i in range(count))
    if cut_short:
        frames += struct.pack(">i", 100) + b"\x00\x12\x00\x00"
    conn.send(frames)
    conn.sock.shutdown(socket.SHUT_WR)
    answered = []
    while True:
        try:
            frame = conn.recv_frame(timeout=15)
        except kw.WireError:
            return answered  # closed by the peer
        except socket.timeout:
            raise AssertionError("%s answered %s and then neither answered nor closed "
                                 "within 15 s" % (address, answered))
        answered.append(struct.unpack(">i", frame[4:8])[0])


def test_a_half_closed_client_is_answered_then_closed_as_by_kafka(h):
    """A client that shuts down its writing side right behind its requests
    (a script piping a request, some health checks): Kafka 4.4.0 answers
    every whole request, in order, then closes; a frame the end cut short
    gets no answer. Through epochgate the same, also with more requests than
    limits.max_in_flight_per_connection (4 here) lets in flight at once, so
    some wait in its input after the end of stream."""
    c = rk.cluster(h)
    gate = sl.start_gate(h, None, upstream=c.bootstrap,
                         config="limits:\n  max_in_flight_per_connection: 4\n")
    before = sl.scrape(gate)
    for count, cut_short in ((1, False), (2, True), (12, True)):
        want = [0x4800 + i for i in range(count)]
        direct = _half_closed_exchange(h, c.broker_address(1), count, cut_short)
        assert direct == want, "the control: Kafka answered %s of %s" % (direct, want)
        through = _half_closed_exchange(h, gate.bootstrap_address, count, cut_short)
        assert through == want, "through epochgate %s answered of %s (Kafka: all)" % (
            through, want)
    assert sl.delta(sl.scrape(gate), before, "epochgate_connections_closed_total",
                    reason="client_closed") >= 3


def test_observe_mode_rewrites_real_broker_hints(h):
    before, after = _check_mode(h, "observe")
    assert sl.delta(after, before, sl.HINTS, source="rewritten") >= 2, sl.fences_text(after)


def test_enforce_mode_answers_with_real_epochs(h):
    before, after = _check_mode(h, "enforce")
    assert sl.delta(after, before, sl.FENCED, reason="stale_epoch") >= 1, sl.fences_text(after)


def _move_behind_the_views_back(c, topic, gate, d, md_direct):
    """Moves partition 0 away from its leader straight from the Admin client,
    so nothing tells epochgate's view (its periodic refresh is minutes away).
    Returns (old leader, its epoch, new leader)."""
    old, epoch = _partition0(md_direct, topic)
    new = 1 + old % 3
    c.ctl("move %s 0 %d" % (topic, new))
    moved = sw.parse_metadata_response_v12(d.exchange(sw.metadata_request_v12(20, [topic]), new))
    assert _partition0(moved, topic) == (new, epoch + 1), moved
    v = sl.view_partition(gate, topic, 0)
    assert (v["leader"], v["epoch"]) == (old, epoch), ("the view learned the move already", v)
    return old, epoch, new


def test_injected_epoch_one_move_behind_answers_as_without_epoch(h):
    c, topic, gate, g, d, md_gate, md_direct = _setup(h, "enforce", name="injected")
    before = sl.scrape(gate)
    old, _, _ = _move_behind_the_views_back(c, topic, gate, d, md_direct)

    fd = sw.parse_fetch_response(d.exchange(sw.fetch_request(21, topic, [(0, -1, 0)], version=10), old), 10)
    fg = sw.parse_fetch_response(g.exchange(sw.fetch_request(22, topic, [(0, -1, 0)], version=10), old), 10)
    dp, gp = fd["partitions"][(topic, 0)], fg["partitions"][(topic, 0)]
    after = sl.scrape(gate)
    h.note("Fetch v10 without epoch to the old leader %d: direct error %d, epochgate error %d" % (
        old, dp["error"], gp["error"]))
    assert dp["error"] == NOT_LEADER, fd
    assert gp["error"] == NOT_LEADER, fg
    assert sl.delta(after, before, "epochgate_epochs_injected_total") == 1, after
    assert sl.delta(after, before, "epochgate_injected_epoch_answers_total") == 1, after


def test_epochless_fetch_v16_to_the_old_leader_is_served_as_direct(h):
    c, topic, gate, g, d, md_gate, md_direct = _setup(h, "enforce", name="follower-fetch")
    tid = bytes.fromhex(md_direct["topics"][topic]["topic_id"])
    before = sl.scrape(gate)
    old, epoch, new = _move_behind_the_views_back(c, topic, gate, d, md_direct)

    def both(corr):
        fd, fg = _fetch(d, old, tid, -1, corr), _fetch(g, old, tid, -1, corr + 1)
        return list(fd["partitions"].values())[0], list(fg["partitions"].values())[0], fd, fg

    # The view still names `old` leader: the fetch goes as sent.
    dp, gp, fd, fg = both(31)
    h.note("Fetch v16 without epoch to the old leader %d, view not told: direct error %d, "
           "epochgate error %d" % (old, dp["error"], gp["error"]))
    assert dp["error"] == 0, fd
    assert gp["error"] == dp["error"], (fd, fg)
    mid = sl.scrape(gate)
    assert sl.delta(mid, before, "epochgate_epochs_injected_total") == 0, mid

    # The view learns the move: the fetch to the follower carries its epoch.
    g.metadata_v12([topic])
    sl.wait_view(gate, topic, 0, new, epoch + 1)
    # Precondition, straight at the cluster: `old` holds the new epoch (a
    # broker publishes its metadata before its partitions take the epoch).
    corr = iter(range(40, 1000))
    harness.wait_until(
        lambda: list(_fetch(d, old, tid, epoch + 1, next(corr))["partitions"].values())[0]["error"] == 0,
        10, what="broker %d serving at epoch %d" % (old, epoch + 1))
    dp, gp, fd, fg = both(33)
    after = sl.scrape(gate)
    h.note("the same after the view learned leader %d epoch %d: direct error %d, epochgate "
           "error %d" % (new, epoch + 1, dp["error"], gp["error"]))
    assert dp["error"] == 0, fd
    assert gp["error"] == dp["error"], (fd, fg)
    assert sl.delta(after, mid, "epochgate_epochs_injected_total") == 1, after
    assert sl.delta(after, before, "epochgate_injected_epoch_answers_total") == 0, after
    assert not _leaks(g.frames, c), _leaks(g.frames, c)


for _f in list(globals().values()):
    if callable(_f) and getattr(_f, "__name__", "").startswith("test_"):
        _f.timeout = 300

if __name__ == "__main__":
    harness.main(globals())
