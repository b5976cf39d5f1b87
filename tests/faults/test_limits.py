"""Resource limits, each through a real epochgate in front of
the mock cluster, each asserting what closes (only the offending connection),
the metric an operator would watch, and a log line that names the limit:

| limit                         | metric asserted                                              |
|-------------------------------|--------------------------------------------------------------|
| limits.max_frame_bytes        | frame_errors_total{reason=frame_too_large}, connections_closed_total{reason=frame_too_large} |
| negative size prefix          | frame_errors_total{reason=negative_frame_size}               |
| limits.partial_frame_timeout_ms | frame_errors_total{reason=partial_frame_timeout}, connections_closed_total{reason=partial_frame_timeout}; a bare size prefix is timed; none while a stopped broker holds the client |
| limits.idle_timeout_ms        | connections_closed_total{reason=idle_timeout}                |
| limits.max_connections        | connections_closed_total{reason=max_connections}             |
| limits.max_in_flight_per_connection | backpressure_pauses_total{direction=client_to_upstream}; nothing refused |
| limits.buffer_budget_bytes    | buffer_budget_pauses_total, buffered_bytes gauge             |
| budget fairness and resume    | a light client is answered while heavy ones hold the budget; a client connecting during the pause is answered |
| pre-authentication frame cap  | frame_errors_total{reason=pre_auth_frame_too_large} (512 KiB, as a broker before login) |
"""

import re
import signal
import socket
import struct
import threading
import time

from faults_common import (api_versions_ok, bootstrap_address, closed_by_peer, connect,  # noqa: E402
                           harness, kw, metric_of, start_gate, wait_metric)

TOPIC = "limits"


def _log_mentions(gate, *words):
    with open(gate.proc.log_path, errors="replace") as f:
        text = f.read()
    return all(w in text for w in words)


def _setup(h, limits, brokers=1):
    cluster = h.start_cluster(brokers, ["%s:1:1" % TOPIC])
    gate = start_gate(h, cluster.bootstrap, limits=limits)
    bystander = connect(bootstrap_address(gate))
    h.on_close(bystander.close)
    assert api_versions_ok(bystander, corr=1)
    return cluster, gate, bystander


def _victim(h, gate):
    c = connect(bootstrap_address(gate))
    h.on_close(c.close)
    return c


def test_oversized_frame_closes_only_that_connection(h):
    _, gate, bystander = _setup(h, {"max_frame_bytes": 1048576})
    victim = _victim(h, gate)
    # Only the size prefix and a few bytes: epochgate must not wait for 1 MiB.
    victim.send(struct.pack(">i", 1048577) + b"\x00\x12\x00\x00")
    started = time.monotonic()
    assert closed_by_peer(victim, 5), "oversized frame: connection still open"
    assert time.monotonic() - started < 3
    wait_metric(gate, "epochgate_frame_errors_total", 1, reason="frame_too_large")
    wait_metric(gate, "epochgate_connections_closed_total", 1, reason="frame_too_large")
    assert api_versions_ok(bystander, corr=2)
    # A frame of exactly the limit is not refused for its size.
    exact = _victim(h, gate)
    exact.send(struct.pack(">i", 1048576) + b"\x00" * 1024)
    assert not closed_by_peer(exact, 1.5), "a frame of exactly max_frame_bytes was refused"
    assert metric_of(gate, "epochgate_frame_errors_total", reason="frame_too_large") == 1
    assert _log_mentions(gate, "frame_too_large")


def test_negative_size_prefix_closes_only_that_connection(h):
    _, gate, bystander = _setup(h, {})
    victim = _victim(h, gate)
    victim.send(struct.pack(">i", -5) + b"junk")
    assert closed_by_peer(victim, 5)
    wait_metric(gate, "epochgate_frame_errors_total", 1, reason="negative_frame_size")
    wait_metric(gate, "epochgate_connections_closed_total", 1, reason="negative_frame_size")
    assert api_versions_ok(bystander, corr=2)


def test_slow_sender_partial_frame_timeout(h):
    _, gate, bystander = _setup(h, {"partial_frame_timeout_ms": 1000})
    # In time: a frame in two pieces 300 ms apart is answered.
    ok = _victim(h, gate)
    frame = kw.api_versions_request(7, 0)
    ok.send(frame[:6])
    time.sleep(0.3)
    ok.send(frame[6:])
    assert kw.frame_correlation_id(ok.recv_frame(timeout=5), is_request=False) == 7
    # Too slow: 10 bytes of a 100-byte frame, then nothing.
    slow = _victim(h, gate)
    slow.send(struct.pack(">i", 100) + b"\x00\x12\x00\x00\x00\x00")
    started = time.monotonic()
    assert closed_by_peer(slow, 6), "a partial frame was held past partial_frame_timeout_ms"
    held = time.monotonic() - started
    assert held >= 0.9, "closed after %.2fs, before the 1 s timeout" % held
    wait_metric(gate, "epochgate_frame_errors_total", 1, reason="partial_frame_timeout")
    wait_metric(gate, "epochgate_connections_closed_total", 1, reason="partial_frame_timeout")
    assert api_versions_ok(bystander, corr=3)
    assert api_versions_ok(ok, corr=8)
    assert _log_mentions(gate, "partial frame")
    # A bare size prefix announcing a large frame (no API key yet, so no
    # buffer of its size) is timed from those 4 bytes too.
    prefix_only = _victim(h, gate)
    prefix_only.send(struct.pack(">i", 1048576))
    started = time.monotonic()
    assert closed_by_peer(prefix_only, 6), "a bare 1 MiB size prefix was never timed out"
    prefix_held = time.monotonic() - started
    assert prefix_held >= 0.9, prefix_held
    wait_metric(gate, "epochgate_frame_errors_total", 2, reason="partial_frame_timeout")
    h.note("partial frame closed after %.2fs, a bare 1 MiB size prefix after %.2fs "
           "(timeout 1 s, sweep every 1 s)" % (held, prefix_held))


def test_partial_frame_held_for_a_stopped_broker_is_not_timed_out(h):
    # A client streaming 1 MiB Produce requests while its broker is stopped
    # (SIGSTOP: the broker's socket buffers fill, then epochgate stops reading
    # the client mid-request) is sending, not stalling: the broker's wait
    # must not close it as a partial-frame timeout.
    cluster, gate, bystander = _setup(h, {"partial_frame_timeout_ms": 1000})
    client = _victim(h, gate)
    # 48 MiB: far more than the loopback socket buffers on both sides take
    # (about 9 MiB here), so epochgate must stop reading the client.
    count = 48
    batch = kw.record_batch([b"v" * 1000] * 1000)
    frames = b"".join(kw.produce_request(100 + i, TOPIC, 0, batch, acks=1) for i in range(count))
    broker = cluster.proc.proc
    broker.send_signal(signal.SIGSTOP)
    h.on_close(lambda: broker.send_signal(signal.SIGCONT))
    sent = [0]

    def send_all():
        client.sock.settimeout(30)
        view = memoryview(frames)
        while sent[0] < len(frames):
            n = client.sock.send(view[sent[0]:sent[0] + 65536])
            sent[0] += n

    sender = threading.Thread(target=send_all, daemon=True)
    sender.start()
    time.sleep(3.5)  # the timeout (1 s) and the sweep (1 s) passed, with room
    stuck_at = sent[0]
    timeouts = metric_of(gate, "epochgate_frame_errors_total", reason="partial_frame_timeout")
    broker.send_signal(signal.SIGCONT)
    assert stuck_at < len(frames), "the client sent everything: epochgate never stopped reading it"
    assert timeouts == 0, ("the client was closed as a partial-frame timeout while epochgate "
                           "held its reads for a stopped broker")
    sender.join(30)
    assert sent[0] == len(frames)
    got = [kw.frame_correlation_id(client.recv_frame(timeout=15), is_request=False)
           for _ in range(count)]
    assert got == [100 + i for i in range(count)], got
    assert api_versions_ok(bystander, corr=9)
    h.note("broker stopped 3.5 s: client held at %d of %d bytes, not timed out; all %d "
           "Produce requests answered in order after SIGCONT" % (stuck_at, len(frames), count))


def test_idle_timeout_closes_idle_keeps_active(h):
    _, gate, active = _setup(h, {"idle_timeout_ms": 1500})
    idle = _victim(h, gate)
    assert api_versions_ok(idle, corr=1)
    started = time.monotonic()
    corr = 10
    closed_at = None
    while time.monotonic() - started < 4.5:
        assert api_versions_ok(active, corr=corr)
        corr += 1
        if closed_at is None and closed_by_peer(idle, 0.4):
            closed_at = time.monotonic() - started
    assert closed_at is not None, "the idle connection was not closed within 4.5 s"
    assert closed_at >= 1.4, "idle connection closed after %.2fs (< 1.5 s)" % closed_at
    wait_metric(gate, "epochgate_connections_closed_total", 1, reason="idle_timeout")
    assert api_versions_ok(active, corr=corr)
    assert _log_mentions(gate, "idle")
    h.note("idle connection closed after %.2fs (timeout 1.5 s); active one kept" % closed_at)


def test_max_connections_refuses_extra_only(h):
    _, gate, first = _setup(h, {"max_connections": 3})
    others = [_victim(h, gate) for _ in range(2)]
    for i, c in enumerate(others):
        assert api_versions_ok(c, corr=10 + i)
    extra = _victim(h, gate)
    extra.send(kw.api_versions_request(20, 0))
    assert closed_by_peer(extra, 5), "a 4th connection was served with max_connections 3"
    wait_metric(gate, "epochgate_connections_closed_total", 1, reason="max_connections")
    # The refused connection was never open: the gauge still says 3.
    active = metric_of(gate, "epochgate_connections_active", side="client")
    assert active == 3, ("epochgate_connections_active{side=client} is %s with 3 clients open "
                         "after one refusal (a refused connection is counted closed but was "
                         "never counted open)" % active)
    for i, c in enumerate([first] + others):
        assert api_versions_ok(c, corr=30 + i)
    # A slot freed is a slot usable again (the count goes down on close).
    others[0].close()
    harness.wait_until(
        lambda: metric_of(gate, "epochgate_connections_active", side="client") == 2, 10,
        what="2 client connections active")
    again = _victim(h, gate)
    assert api_versions_ok(again, corr=40)
    assert _log_mentions(gate, "maximum")
    h.note("max_connections 3: the 4th closed; frame_errors_total{reason=max_connections}=%d" %
           metric_of(gate, "epochgate_frame_errors_total", reason="max_connections"))


def test_max_in_flight_pauses_and_answers_all(h):
    cluster, gate, _ = _setup(h, {"max_in_flight_per_connection": 4})
    cluster.cmd("rtt 1 100")
    conn = _victim(h, gate)
    ids = list(range(1000, 1040))
    conn.send(b"".join(kw.api_versions_request(i, 0) if i % 3 else
                       kw.metadata_request(i, [TOPIC], version=1) for i in ids))
    got = [kw.frame_correlation_id(conn.recv_frame(timeout=30), is_request=False) for _ in ids]
    assert got == ids, got
    pauses = wait_metric(gate, "epochgate_backpressure_pauses_total", 1,
                         direction="client_to_upstream")
    assert metric_of(gate, "epochgate_frame_errors_total") == 0
    assert _log_mentions(gate, "limits.max_in_flight_per_connection")
    h.note("40 pipelined with max_in_flight 4: all answered in order, %d pauses" % pauses)


def test_buffer_budget_pauses_reading(h):
    budget = 2 * 1048576
    _, gate, bystander = _setup(h, {"buffer_budget_bytes": budget,
                                    "high_watermark_bytes": 262144,
                                    "low_watermark_bytes": 65536,
                                    "partial_frame_timeout_ms": 60000})
    # Six clients each hold 1 MiB of a 1.5 MiB frame: 6 MiB would be buffered
    # without a budget.
    chunk = b"\x00" * 65536
    hogs = []
    for _ in range(6):
        c = _victim(h, gate)
        c.send(struct.pack(">i", 3 * 524288) + b"\x00\x00\x00\x07\x00\x00\x00\x01")
        hogs.append(c)
    for c in hogs:
        c.sock.setblocking(False)
    sent = [0] * len(hogs)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and min(sent) < 1048576:
        for i, c in enumerate(hogs):
            if sent[i] >= 1048576:
                continue
            try:
                sent[i] += c.sock.send(chunk)
            except BlockingIOError:
                pass
        time.sleep(0.01)
    time.sleep(1.0)
    buffered = metric_of(gate, "epochgate_buffered_bytes")
    pauses = metric_of(gate, "epochgate_buffer_budget_pauses_total")
    h.note("budget %d: clients pushed %d bytes, epochgate_buffered_bytes=%d, pauses=%d" % (
        budget, sum(sent), buffered, pauses))
    assert pauses >= 1, "no read paused although %d bytes were offered against a %d budget" % (
        sum(sent), budget)
    # Bounded by the budget plus what each client connection may take in
    # before it sees the budget: one pooled 64 KiB block of input and one of
    # output (7 client connections here: 6 hogs and the bystander).
    slack = (len(hogs) + 1) * 2 * 65536
    assert buffered <= budget + slack, "%d buffered, budget %d + slack %d" % (
        buffered, budget, slack)
    assert _log_mentions(gate, "limits.buffer_budget_bytes")
    # Abort (RST): a graceful close would queue its FIN behind the bytes
    # epochgate is not reading, so no peer could tell it apart from a slow
    # sender; the partial-frame timeout covers that case.
    for c in hogs:
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
    # Everything the hogs held comes back: what is left is at most the
    # bystander's blocks (a budget that never came back down once paused
    # every client for good).
    harness.wait_until(lambda: metric_of(gate, "epochgate_buffered_bytes") <= 2 * 65536, 10,
                       what="buffered bytes released after the hogs closed")
    assert api_versions_ok(bystander, corr=2)


def test_declared_frame_size_alone_does_not_starve_others(h):
    # Four bytes that announce a 60 MiB frame are not 60 MiB of data: a
    # client that sends only a size prefix must not use up the buffer budget
    # and stall every other client until partial_frame_timeout_ms.
    budget = 64 * 1048576
    _, gate, bystander = _setup(h, {"buffer_budget_bytes": budget})
    squatters = []
    for _ in range(2):
        c = _victim(h, gate)
        c.send(struct.pack(">i", 60 * 1048576))
        squatters.append(c)
    time.sleep(0.5)
    held = metric_of(gate, "epochgate_buffered_bytes")
    started = time.monotonic()
    try:
        api_versions_ok(bystander, corr=2, timeout=3)
        waited = None
    except OSError:
        waited = time.monotonic() - started
    fresh = _victim(h, gate)
    try:
        api_versions_ok(fresh, corr=3, timeout=3)
        fresh_ok = True
    except OSError:
        fresh_ok = False
    h.note("2 clients sent only a 60 MiB size prefix: buffered_bytes=%d (budget %d), "
           "budget pauses=%d" % (held, budget,
                                 metric_of(gate, "epochgate_buffer_budget_pauses_total")))
    assert waited is None and fresh_ok, (
        "other clients stalled (existing answered: %s, new answered: %s) because 8 bytes of "
        "size prefixes count as %d buffered bytes against a %d budget" % (
            waited is None, fresh_ok, held, budget))
    assert held < budget, held




def _hogs_fill_the_budget(h, gate, count, each):
    """`count` clients each send `each` bytes of a 1.5 MiB frame (held:
    the frame never completes). Returns their connections."""
    chunk = b"\x00" * 65536
    hogs = []
    for _ in range(count):
        c = _victim(h, gate)
        c.send(struct.pack(">i", 3 * 524288) + b"\x00\x00\x00\x07\x00\x00\x00\x01")
        hogs.append(c)
    for c in hogs:
        c.sock.setblocking(False)
    sent = [0] * len(hogs)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and min(sent) < each:
        for i, c in enumerate(hogs):
            if sent[i] >= each:
                continue
            try:
                sent[i] += c.sock.send(chunk)
            except BlockingIOError:
                pass
        time.sleep(0.01)
    time.sleep(1.0)
    return hogs


def test_budget_is_shared_fairly_and_every_paused_client_resumes(h):
    budget = 2 * 1048576
    _, gate, bystander = _setup(h, {"buffer_budget_bytes": budget,
                                    "high_watermark_bytes": 262144,
                                    "low_watermark_bytes": 65536,
                                    "partial_frame_timeout_ms": 60000})
    hogs = _hogs_fill_the_budget(h, gate, 6, 1048576)
    pauses = metric_of(gate, "epochgate_buffer_budget_pauses_total")
    assert pauses >= 1, "the hogs did not fill the budget"
    # A client holding next to nothing keeps being served while the few that
    # hold the budget wait: request after request, not only the one it had
    # started reading.
    for corr in range(2, 7):
        try:
            api_versions_ok(bystander, corr=corr, timeout=3)
        except OSError:
            raise AssertionError("the bystander's request %d stalled while 6 clients held the "
                                 "budget" % (corr - 1))
    # A client that connects during the pause is served too, at once or once
    # the budget frees: its first request must never wait for the idle timeout.
    newcomer = _victim(h, gate)
    newcomer.send(kw.api_versions_request(0x77, 0))
    answered_during_pause = True
    try:
        frame = newcomer.recv_frame(timeout=3)
    except OSError:
        answered_during_pause = False
        frame = None
    for c in hogs:
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
    if frame is None:
        frame = newcomer.recv_frame(timeout=5)
    corr, error, _ = kw.parse_api_versions_response(frame, 0)
    assert corr == 0x77 and error == 0, (corr, error)
    h.note("budget %d held by 6 clients (pauses=%d): bystander answered; newcomer answered %s" % (
        budget, pauses, "during the pause" if answered_during_pause else "after it"))
    assert api_versions_ok(newcomer, corr=0x78)


def test_pre_authentication_frames_are_capped_at_512_kib(h):
    _, gate, bystander = _setup(h, {})
    cap = 512 * 1024
    # A SaslHandshake (17), an ApiVersions (18) and a SaslAuthenticate (36)
    # larger than a broker takes before login: closed as soon as the header
    # shows it, without waiting for (or buffering) the rest.
    for n, key in enumerate((17, 18, 36), start=1):
        victim = _victim(h, gate)
        victim.send(struct.pack(">ihhi", cap + 1, key, 1, n) + b"\x00" * 1024)
        started = time.monotonic()
        assert closed_by_peer(victim, 5), "api %d: a %d-byte frame before login was held" % (
            key, cap + 1)
        assert time.monotonic() - started < 3
        wait_metric(gate, "epochgate_frame_errors_total", n, reason="pre_auth_frame_too_large")
    # At the cap it is not refused for its size.
    exact = _victim(h, gate)
    exact.send(struct.pack(">ihhi", cap, 17, 1, 9) + b"\x00" * 1024)
    assert not closed_by_peer(exact, 1.5), "a frame of exactly 512 KiB was refused"
    # Without SASL on the cluster a large Produce needs no login (as on a
    # broker's PLAINTEXT listener): the general limit applies.
    produce = _victim(h, gate)
    produce.send(struct.pack(">ihhi", cap + 1, 0, 7, 10) + b"\x00" * 1024)
    assert not closed_by_peer(produce, 1.5), "a large Produce was refused on a cluster without SASL"
    assert metric_of(gate, "epochgate_frame_errors_total", reason="pre_auth_frame_too_large") == 3
    assert _log_mentions(gate, "pre_auth_frame_too_large", "before authentication")
    assert api_versions_ok(bystander, corr=2)


def test_a_storm_of_bad_frames_does_not_flood_the_log(h):
    # 250 connections, each closed for a malformed frame within about a
    # second: every one is counted, but the log gets at most
    # logging.rate_limit_per_sec (default 10) lines a second for the site and
    # a line saying how many it suppressed.
    _, gate, bystander = _setup(h, {})
    storm = 250
    for i in range(storm):
        # Left open: epochgate reads a client only once its upstream is up,
        # and a client gone before that is closed unread, not counted.
        _victim(h, gate).send(struct.pack(">i", -1 - i))
    wait_metric(gate, "epochgate_frame_errors_total", storm, reason="negative_frame_size")
    assert api_versions_ok(bystander, corr=2)

    def log_lines():
        with open(gate.proc.log_path, errors="replace") as f:
            return f.readlines()

    def summary_lines():
        return [l for l in log_lines() if "suppressed" in l and '"frame_error"' in l]

    def accounted():
        # Lines written plus lines the summaries say were suppressed.
        closing = [l for l in log_lines() if "closing connection: negative_frame_size" in l]
        dropped = sum(int(re.search(r"suppressed (\d+)", l).group(1)) for l in summary_lines())
        return closing, dropped

    # A summary is written once the second of the last suppressed line has
    # passed, by the next line of the site or by the 1 s housekeeping tick: up
    # to about 2 s after the storm.
    try:
        harness.wait_until(lambda: len(accounted()[0]) + accounted()[1] >= storm, 5.0,
                           what="summaries accounting for every bad frame")
    except AssertionError:
        pass
    closing, dropped = accounted()
    summaries = summary_lines()
    h.note("%d bad frames: %d log lines about them, %d summaries of %d suppressed" % (
        storm, len(closing), len(summaries), dropped))
    assert len(closing) <= 40, "%d lines for %d frame errors" % (len(closing), storm)
    assert summaries, "no line says how many were suppressed"
    assert len(closing) + dropped == storm, (
        "%d written + %d suppressed for %d frame errors" % (len(closing), dropped, storm))

if __name__ == "__main__":
    harness.main(globals())
