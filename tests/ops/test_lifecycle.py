"""Operating epochgate under traffic: a config reload while a
librdkafka producer runs loses nothing and drops no connection; an invalid
reload is refused and the running config stays; SIGTERM drains: readiness
turns false, no new connections, an in-flight request still gets its answer,
then exit 0. Everything through the embedded cluster and real clients."""

import os
import re
import signal
import socket
import time

from epochgate_testlib import harness  # noqa: E402
from epochgate_testlib import kafka_wire as kw  # noqa: E402
from epochgate_testlib import prom_text  # noqa: E402

TOPIC = "orders"


def metric(text, name, labels=None):
    return prom_text.metric(text, name, **(labels or {}))


def write_config(path, level, mode):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("logging:\n  level: %s\npolicy:\n  default_mode: %s\n"
                "limits:\n  max_in_flight_per_connection: 500\n" % (level, mode))
    os.replace(tmp, path)


def test_reload_under_traffic_keeps_connections_and_messages(h):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    cfg = os.path.join(h.workdir, "epochgate.yaml")
    write_config(cfg, "info", "enforce")
    gate = h.start_gate(cluster.bootstrap, ["--config", cfg])
    check = h.rdkafka_check_async(["--bootstrap", gate.bootstrap, "--topic", TOPIC,
                                   "--duration-s", "8", "--rate", "400", "--idempotent",
                                   "--acks", "all", "--partitions-keyed",
                                   "--consume-group", "reload-group"])
    harness.wait_until(lambda: metric(gate.metrics(), "epochgate_requests_total",
                                      {"api": "produce"}) > 20, 30, what="produce traffic")
    before = gate.metrics()
    opened = metric(before, "epochgate_connections_total", {"side": "client"})
    closed = metric(before, "epochgate_connections_closed_total")
    write_config(cfg, "debug", "observe")
    harness.wait_until(lambda: metric(gate.metrics(), "epochgate_config_reloads_total",
                                      {"result": "success"}) >= 1, 10, what="reload applied")
    status, body = gate.http_get("/debug/config")
    assert status == 200 and '"observe"' in body, body[:400]
    # An invalid file is refused; the running config (observe) stays.
    with open(cfg, "w") as f:
        f.write("policy:\n  default_mode: sometimes\nlimtis: {}\n")
    gate.proc.proc.send_signal(signal.SIGHUP)
    harness.wait_until(lambda: metric(gate.metrics(), "epochgate_config_reloads_total",
                                      {"result": "failure"}) >= 1, 10, what="reload refused")
    status, body = gate.http_get("/debug/config")
    assert '"observe"' in body, "running config changed after an invalid reload"
    time.sleep(1.0)  # traffic keeps flowing after both reloads
    after = gate.metrics()
    assert metric(after, "epochgate_connections_closed_total") == closed, \
        "connections were closed by the reload"
    s = check.result(timeout=90)
    assert s["missing"] == 0 and s["duplicates"] == 0 and s["acked"] > 0, s
    end = gate.metrics()
    # The client made no new connection while the config was swapped (it may
    # open its consumer-group connections after producing, so compare the
    # window around the reloads only).
    assert metric(after, "epochgate_connections_total", {"side": "client"}) == opened, \
        "a client reconnected during the reload"
    h.note("produced %d, consumed %d, reloads ok=%d failed=%d" % (
        s["acked"], s["consumed"],
        metric(end, "epochgate_config_reloads_total", {"result": "success"}),
        metric(end, "epochgate_config_reloads_total", {"result": "failure"})))


def test_sigterm_drains_in_flight_requests_then_exits_zero(h):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    gate = h.start_gate(cluster.bootstrap)
    host, port = gate.bootstrap_address
    harness.wait_until(lambda: gate.http_get("/readyz")[0] == 200, 10, what="ready")
    conn = kw.Connection(host, port, timeout=10)
    h.on_close(conn.close)
    conn.send(kw.api_versions_request(1, 0))
    conn.recv_frame()
    # Slow every broker down so the next request is still in flight at SIGTERM.
    for b in (1, 2, 3):
        cluster.cmd("rtt %d 1500" % b)
    read_before = metric(gate.metrics(), "epochgate_requests_total", {"api": "metadata"})
    conn.send(kw.metadata_request(77, [TOPIC], version=1))
    # SIGTERM once epochgate has read the request (the broker holds its
    # answer for 1.5 s), not after a guessed pause.
    harness.wait_until(lambda: metric(gate.metrics(), "epochgate_requests_total",
                                      {"api": "metadata"}) > read_before, 5,
                       what="epochgate to read the Metadata request")
    t0 = time.monotonic()
    gate.proc.proc.send_signal(signal.SIGTERM)
    harness.wait_until(lambda: gate.http_get("/readyz")[0] == 503, 5, what="readiness false")
    # No new connections while draining: the connect is refused, or the
    # connection is closed (EOF or RST) without an answer. Silence until the
    # timeout is not a refusal (a hung listener looks like that).
    outcome = _new_connection_outcome(host, port, timeout=5)
    assert outcome in ("refused", "eof", "reset"), (
        "a new connection while draining was %s (expected refused, EOF or RST)" % outcome)
    frame = conn.recv_frame(timeout=10)
    assert kw.frame_correlation_id(frame, is_request=False) == 77, "in-flight request lost"
    md = kw.parse_metadata_response(frame, 1)
    assert TOPIC in md["topics"], md
    rc = gate.proc.proc.wait(timeout=30)
    assert rc == 0, "exit code %d after drain" % rc
    h.note("drained and exited 0 in %.2f s; a new connection while draining: %s"
           % (time.monotonic() - t0, outcome))


def _new_connection_outcome(host, port, timeout):
    """What a new client sees: "refused" (connect failed with
    ECONNREFUSED), "eof" or "reset" (connected, then closed without a byte),
    "answered" (bytes came back) or "timeout" (nothing within `timeout` s)."""
    try:
        s = socket.create_connection((host, port), timeout=timeout)
    except ConnectionRefusedError:
        return "refused"
    except socket.timeout:
        return "timeout"
    try:
        s.settimeout(timeout)
        try:
            s.sendall(kw.api_versions_request(5, 0))
        except (ConnectionResetError, BrokenPipeError):
            return "reset"
        try:
            data = s.recv(1)
        except ConnectionResetError:
            return "reset"
        except socket.timeout:
            return "timeout"
        return "eof" if data == b"" else "answered"
    finally:
        s.close()


def test_check_config_reports_file_line_and_reason(h):
    bad = os.path.join(h.workdir, "bad.yaml")
    with open(bad, "w") as f:
        f.write("listen: 127.0.0.1:9092\nlimits:\n  max_frame_bytez: 10\n")
    r = h.run([h.epochgate_path, "--check-config", bad], check=False)
    assert r.returncode == 1, r
    assert re.search(r"bad\.yaml:3:\d+: .*max_frame_bytez.*max_frame_bytes", r.stdout + r.stderr), \
        r.stdout + r.stderr
    good = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config",
                        "example.yaml")
    r = h.run([h.epochgate_path, "--check-config", good], check=False)
    assert r.returncode == 0, r.stdout + r.stderr


if __name__ == "__main__":
    harness.main(globals())
