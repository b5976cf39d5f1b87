"""Decoded memory and time are bounded by the frame and by
limits.max_partitions_per_request, through a real epochgate (one worker, so
the bystander shares the attacker's event loop) in front of the mock cluster.

The attack: a Produce v9 frame whose topic array declares as many entries as
its bytes allow, 3 bytes each (empty name, no partitions, no tags). Decoded at
about 96 bytes an entry, such a frame used to cost 32 times its size before
any of it was checked. Each case asserts:
- epochgate's peak resident memory (VmHWM in /proc/PID/status) grows by less
  than 3 times the frames it was sent (the frames themselves are buffered);
- only the attacker's connection closes (the bystander keeps answering), with
  frame_errors_total{reason=too_many_partitions} and a log line naming the
  limit;
- a bystander on the same worker sending ApiVersions round trips the whole
  time is never delayed long (its worst round trip is reported);
- at the cap, a request is forwarded and answered by the broker, and one entry
  more closes only its own connection.
Frames are 20 MiB to keep the run short; the ratio is what is asserted.

Two cases send one frame near the 100 MiB frame limit (a hostile 99 MiB one,
and a valid 90 MiB Produce the broker takes, under the mock's 100,000,000-byte
request limit) and compare the bystander's 99th percentile round trip with
the same probe straight at the broker in the same window (the broker's own
stall on a 90 MiB append reaches both probes): the bystander's 99th percentile
may exceed the direct probe's worst round trip by at most
BYSTANDER_P99_EXTRA_S. Both figures are notes.
"""

import os
import select
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
from faults_common import (api_versions_ok, bootstrap_address, closed_by_peer, connect,  # noqa: E402
                           harness, kw, metric_of, start_gate, wait_metric)

TOPIC = "hostile"
FRAME_MIB = 20
# What one worker may spend on a 20 MiB hostile frame: reading it off the
# socket and refusing it at the array count costs about 35 ms of CPU here;
# decoding its 7 million entries (as before the cap) cost seconds. CPU time,
# unlike a round trip, does not grow when other jobs share the 2 cores, and a
# loop cannot be held longer than the CPU it uses.
CPU_PER_FRAME_S = 0.25
# Worst bystander round trip tolerated (wall clock, so it includes waiting for
# a core on a loaded machine; the figures are in the notes). A loop held by
# the decode held every bystander for seconds (11.3 s at 99 MiB).
BYSTANDER_MAX_S = 2.0
# What one huge frame may add to a bystander's 99th percentile round trip
# over the worst direct round trip in the same window. Before reads were
# paced, large frames read into a buffer of their own size, forwarded from
# it and freed off the loop, a 99 MiB frame added 540-800 ms here. The goal
# is a few ms; on this 2-core machine shared at load 15, the worker that
# reads 99 MiB (about 0.2 s of kernel copying and page faults) waits for a
# core between turns, which the idle broker does not, and the bystander's
# p99 was 27-40 ms above the direct probe's (notes), so the bound is 100 ms.
BYSTANDER_P99_EXTRA_S = 0.100


def _hwm_kib(gate):
    with open("/proc/%d/status" % gate.proc.proc.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/%d/status" % gate.proc.proc.pid)


def _cpu_s(gate):
    """User + system CPU seconds epochgate has used (all its threads)."""
    with open("/proc/%d/stat" % gate.proc.proc.pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _log_text(gate):
    with open(gate.proc.log_path, errors="replace") as f:
        return f.read()


def hostile_produce_frame(size_bytes, corr):
    """Produce v9 (header v2) of about `size_bytes`: 3-byte topic entries,
    as many as fit, the count saying exactly that many."""
    n = (size_bytes - 64) // 3
    w = kw.Writer().uvarint(0).int16(1).int32(30000).uvarint(n + 1)
    body = w.getvalue() + b"\x01\x01\x00" * n + b"\x00"
    return kw.request_frame(kw.API_PRODUCE, 9, corr, body, flexible=True), n


def produce_v3_partitions(corr, topic, partitions, batch):
    """Produce v3, one topic with `partitions` partition entries (0..n-1),
    each carrying `batch`: 1 + partitions entries in all."""
    w = kw.Writer().string(None).int16(1).int32(10000)
    w.array([topic], lambda w, t: w.string(t).array(
        list(range(partitions)), lambda w, p: w.int32(p).bytes_(batch)))
    return kw.request_frame(kw.API_PRODUCE, 3, corr, w.getvalue())


class Bystander:
    """A client on the attacker's worker timing ApiVersions round trips, in
    its own process (rtt_probe.py), so the test's threads cannot delay it."""

    def __init__(self, h, address):
        host, port = address
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "rtt_probe.py"), host, str(port), "120"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        h.on_close(self._kill)
        ready, _, _ = select.select([self.proc.stdout], [], [], 20)
        assert ready and self.proc.stdout.readline().strip() == "ready", "rtt_probe not ready"
        self.samples = []  # (CLOCK_MONOTONIC start, round trip seconds)

    def _kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self):
        out, _ = self.proc.communicate(input="", timeout=60)
        assert self.proc.returncode == 0, "bystander failed (rc %s): %s" % (
            self.proc.returncode, out[-500:])
        self.samples = [tuple(map(float, line.split())) for line in out.splitlines() if line]
        return self

    def quantile(self, q, since=0.0, until=float("inf")):
        """(q-quantile round trip, count) of those started in [since, until)."""
        during = sorted(rtt for t0, rtt in self.samples if since <= t0 < until)
        assert during, "no bystander round trip in the window"
        return during[min(len(during) - 1, int(q * len(during)))], len(during)

    def worst(self, since=0.0, until=float("inf")):
        """(worst round trip, count) of those started in [since, until)."""
        during = [rtt for t0, rtt in self.samples if since <= t0 < until]
        assert during, "no bystander round trip in the window"
        return max(during), len(during)


def _setup(h, limits=None):
    cluster = h.start_cluster(1, ["%s:1:1" % TOPIC])
    gate = start_gate(h, cluster.bootstrap, limits=limits or {}, extra_yaml="workers: 1\n")
    return cluster, gate


def _attack(h, cluster, gate, clients):
    """`clients` attackers at once, each sending one hostile frame; returns
    (HWM growth KiB, frame bytes sent, worst bystander round trip in seconds)."""
    frames = [hostile_produce_frame(FRAME_MIB << 20, 7 + i)[0] for i in range(clients)]
    conns = [connect(bootstrap_address(gate), timeout=60) for _ in range(clients)]
    for c in conns:
        h.on_close(c.close)
        assert api_versions_ok(c, corr=3)  # upstream up: the frame is read at once
    other = connect(bootstrap_address(gate))
    h.on_close(other.close)
    assert api_versions_ok(other, corr=4)
    by = Bystander(h, bootstrap_address(gate))
    # The same probe straight at the broker: what waiting for a core on this
    # machine costs in the same window, without epochgate.
    control = Bystander(h, harness.parse_hostport(cluster.bootstrap.split(",")[0]))
    time.sleep(0.5)
    hwm_before = _hwm_kib(gate)
    cpu_before = _cpu_s(gate)
    started = time.monotonic()
    closed = [None] * clients

    def send(i):
        try:
            conns[i].send(frames[i])
        except OSError:
            pass  # closed before the whole frame went: also a refusal
        closed[i] = closed_by_peer(conns[i], 60)

    senders = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(clients)]
    for t in senders:
        t.start()
    for t in senders:
        t.join(90)
    took = time.monotonic() - started
    time.sleep(0.2)
    by.stop()
    control.stop()
    direct, _ = control.worst(since=started)
    growth = _hwm_kib(gate) - hwm_before
    cpu = _cpu_s(gate) - cpu_before
    worst, n = by.worst(since=started)
    calm, _ = by.worst(until=started)  # the half second before the attack
    assert all(closed), "attacker connections left open: %s" % closed
    assert api_versions_ok(other, corr=5), "a connection that sent nothing was closed too"
    sent = sum(len(f) for f in frames)
    h.note("%d x %d MiB hostile Produce v9: VmHWM %d -> %d KiB (+%.1f MiB, %.2fx the frames), "
           "bystander worst rtt %.1f ms over %d round trips (%.1f ms before the attack; a "
           "client straight at the broker: %.1f ms), attack %.1fs, epochgate CPU %.0f ms" % (
               clients, FRAME_MIB, hwm_before, hwm_before + growth, growth / 1024.0,
               growth * 1024.0 / sent, worst * 1000, n, calm * 1000, direct * 1000, took,
               cpu * 1000))
    assert cpu < CPU_PER_FRAME_S * clients, (
        "epochgate used %.0f ms of CPU on %d hostile frames" % (cpu * 1000, clients))
    return growth, sent, worst


def test_hostile_topic_array_refused_with_bounded_memory(h):
    cluster, gate = _setup(h)
    growth, sent, worst = _attack(h, cluster, gate, 1)
    assert growth * 1024 < 3 * sent, (
        "peak RSS grew %.1f MiB for one %d MiB frame" % (growth / 1024.0, FRAME_MIB))
    wait_metric(gate, "epochgate_frame_errors_total", 1, reason="too_many_partitions")
    wait_metric(gate, "epochgate_connections_closed_total", 1, reason="too_many_partitions")
    assert worst < BYSTANDER_MAX_S, "bystander waited %.0f ms" % (worst * 1000)
    text = _log_text(gate)
    assert "too_many_partitions" in text and "limits.max_partitions_per_request" in text


def test_four_hostile_clients_at_once(h):
    cluster, gate = _setup(h)
    growth, sent, worst = _attack(h, cluster, gate, 4)
    assert growth * 1024 < 3 * sent, (
        "peak RSS grew %.1f MiB for four %d MiB frames" % (growth / 1024.0, FRAME_MIB))
    wait_metric(gate, "epochgate_frame_errors_total", 4, reason="too_many_partitions")
    assert metric_of(gate, "epochgate_frame_errors_total", reason="too_many_partitions") == 4
    assert worst < BYSTANDER_MAX_S, "bystander waited %.0f ms" % (worst * 1000)


def test_many_unknown_topics_at_the_cap_do_not_hold_the_loop(h):
    # A valid Produce at the default cap: 50,000 topics the cluster does not
    # have, one partition each (100,000 entries, 1 MB). Deciding it used to
    # take 42 s of this worker's loop (a list scanned per topic).
    _, gate = _setup(h)
    w = kw.Writer().string(None).int16(1).int32(10000)
    w.array(["unknown-%d" % i for i in range(50000)], lambda w, t: w.string(t).array(
        [0], lambda w, p: w.int32(p).bytes_(None)))
    frame = kw.request_frame(kw.API_PRODUCE, 3, 41, w.getvalue())
    client = connect(bootstrap_address(gate), timeout=60)
    h.on_close(client.close)
    assert api_versions_ok(client, corr=3)
    by = Bystander(h, bootstrap_address(gate))
    time.sleep(0.5)
    cpu_before = _cpu_s(gate)
    started = time.monotonic()
    client.send(frame)
    corr, parts = kw.parse_produce_response(client.recv_frame(timeout=60), 3)
    took = time.monotonic() - started
    time.sleep(0.2)
    cpu = _cpu_s(gate) - cpu_before
    by.stop()
    worst, n = by.worst(since=started)
    h.note("50,000 unknown topics (100,000 entries, %d bytes): answered in %.2fs, epochgate "
           "CPU %.0f ms, bystander worst rtt %.1f ms over %d round trips" % (
               len(frame), took, cpu * 1000, worst * 1000, n))
    assert corr == 41 and len(parts) == 50000, (corr, len(parts))
    assert all(err != 0 for err, _ in parts.values()), "a partition of an unknown topic appended"
    assert cpu < 1.0, "epochgate used %.0f ms of CPU on one request" % (cpu * 1000)
    assert worst < BYSTANDER_MAX_S, "bystander waited %.0f ms" % (worst * 1000)
    assert metric_of(gate, "epochgate_frame_errors_total", reason="too_many_partitions") == 0


def test_request_at_the_cap_is_forwarded_one_more_entry_closes(h):
    # 1 topic + 999 partitions = 1000 entries: forwarded, the broker answers
    # (partition 0 appends the record; the others do not exist on the mock).
    cluster, gate = _setup(h, {"max_partitions_per_request": 1000})
    by = connect(bootstrap_address(gate))
    h.on_close(by.close)
    assert api_versions_ok(by, corr=1)
    batch = kw.record_batch([b"at-the-cap"])
    at_cap = connect(bootstrap_address(gate))
    h.on_close(at_cap.close)
    at_cap.send(produce_v3_partitions(21, TOPIC, 999, batch))
    corr, parts = kw.parse_produce_response(at_cap.recv_frame(timeout=30), 3)
    assert corr == 21 and len(parts) == 999, (corr, len(parts))
    err, base = parts[(TOPIC, 0)]
    assert err == 0 and base >= 0, "partition 0 not appended by the broker: %s" % (parts[(TOPIC, 0)],)
    assert metric_of(gate, "epochgate_frame_errors_total", reason="too_many_partitions") == 0
    # 1001 entries: refused on that connection only.
    over = connect(bootstrap_address(gate))
    h.on_close(over.close)
    over.send(produce_v3_partitions(22, TOPIC, 1000, batch))
    assert closed_by_peer(over, 10), "a request over the cap was served"
    wait_metric(gate, "epochgate_frame_errors_total", 1, reason="too_many_partitions")
    assert api_versions_ok(by, corr=2) and api_versions_ok(at_cap, corr=23)
    # The refused request never reached the broker: partition 0 got one record.
    check = connect(bootstrap_address(gate))
    h.on_close(check.close)
    check.send(kw.list_offsets_request(31, TOPIC, [0]))
    _, offsets = kw.parse_list_offsets_response(check.recv_frame(timeout=10))
    h.note("cap 1000: 1000 entries answered by the broker, 1001 closed; end offset %s" % offsets)
    assert offsets[(TOPIC, 0)][0] == base + 1, offsets


def valid_produce_frame(size_bytes, corr, topic):
    """Produce v3 to partition 0 of `topic`: one record batch of one record
    whose value makes the frame about `size_bytes`. The batch's CRC is left 0:
    CRC-32C over 90 MiB in pure Python takes minutes, and neither epochgate
    nor the mock broker checks it (rdkafka_mock.c: "mock doesn't validate
    CRC"), so the broker still appends the batch."""
    real = kw.record_batch([b"v"])
    value = b"v" * (size_bytes - 200)
    body = (kw.Writer().int8(0).varint(0).varint(0).varint(-1)
            .varint(len(value)).raw(value).uvarint(0).getvalue())
    record = kw.Writer().varint(len(body)).getvalue() + body
    # Everything after the CRC as in kw.record_batch, then the record.
    after_crc_head = real[8 + 4 + 4 + 1 + 4:8 + 4 + 4 + 1 + 4 + 40]
    after_crc = after_crc_head + record
    tail = kw.Writer().int32(-1).int8(2).uint32(0).raw(after_crc).getvalue()
    batch = kw.Writer().int64(0).int32(len(tail)).raw(tail).getvalue()
    return kw.produce_request(corr, topic, 0, batch, acks=1, timeout_ms=30000, version=3)


def _one_huge_frame(h, frame, expect_answer):
    """Sends `frame` on one connection while a bystander on the same worker
    and a control straight at the broker time round trips; returns (bystander
    p99, direct worst) in seconds (all four figures are in the note)."""
    cluster, gate = _setup(h)
    client = connect(bootstrap_address(gate), timeout=60)
    h.on_close(client.close)
    assert api_versions_ok(client, corr=3)
    by = Bystander(h, bootstrap_address(gate))
    control = Bystander(h, harness.parse_hostport(cluster.bootstrap.split(",")[0]))
    time.sleep(0.5)
    started = time.monotonic()
    try:
        client.send(frame)
    except OSError:
        pass  # refused before the whole frame went
    if expect_answer:
        corr, parts = kw.parse_produce_response(client.recv_frame(timeout=60), 3)
        assert corr == 41 and parts[(TOPIC, 0)][0] == 0, (corr, parts)
    else:
        assert closed_by_peer(client, 60), "the hostile frame was not refused"
    took = time.monotonic() - started
    time.sleep(0.3)
    by.stop()
    control.stop()
    p99, n = by.quantile(0.99, since=started)
    direct_p99, _ = control.quantile(0.99, since=started)
    worst, _ = by.worst(since=started)
    direct_worst, _ = control.worst(since=started)
    h.note("one %.1f MiB %s frame: bystander p99 %.1f ms, worst %.1f ms over %d round trips; "
           "direct at the broker in the same window: p99 %.1f ms, worst %.1f ms; handled in %.2fs" % (
               len(frame) / 1048576.0, "valid Produce" if expect_answer else "hostile Produce v9",
               p99 * 1000, worst * 1000, n, direct_p99 * 1000, direct_worst * 1000, took))
    if expect_answer:
        assert api_versions_ok(client, corr=5), "the client lost its connection"
    return p99, direct_worst


def test_bystander_p99_while_a_99_mib_hostile_frame_is_read(h):
    frame, _ = hostile_produce_frame(99 << 20, 7)
    p99, direct_worst = _one_huge_frame(h, frame, expect_answer=False)
    assert p99 < direct_worst + BYSTANDER_P99_EXTRA_S, (
        "bystander p99 %.1f ms, direct worst %.1f ms" % (p99 * 1000, direct_worst * 1000))


def test_bystander_p99_while_a_90_mib_produce_is_forwarded(h):
    p99, direct_worst = _one_huge_frame(h, valid_produce_frame(90 << 20, 41, TOPIC),
                                        expect_answer=True)
    assert p99 < direct_worst + BYSTANDER_P99_EXTRA_S, (
        "bystander p99 %.1f ms, direct worst %.1f ms" % (p99 * 1000, direct_worst * 1000))


if __name__ == "__main__":
    harness.main(globals())
