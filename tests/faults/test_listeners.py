"""Listeners, readiness, probes and descriptors under hostile or unlucky
conditions, each through a real epochgate:

| case | what a user checks |
|------|--------------------|
| a Metadata answer naming node ids 0..9999 | listeners opened and descriptors used stay bounded by broker_ports.max_node_id; clients still get (and reach) the other brokers; /healthz and /readyz answer; the log stays short; after the cluster stops naming the nodes their listeners close and their ports refuse |
| a node's port taken | /readyz is 503 naming the node, and 200 again by itself once the port frees or the cluster stops naming the node |
| 100 idle keep-alive HTTP connections on the admin port | /healthz still answers at once |
| a small RLIMIT_NOFILE | a start-up warning with numbers; at the limit, accept failures are counted and logged, accepting does not spin, and waiting clients are served (not closed) once descriptors free |

The hostile Metadata answer comes from tests/faults/scripted_broker.py:
neither a real broker nor the mock cluster can be made to name 10,000 nodes.
"""

import os
import socket
import time
import urllib.error
import urllib.request

from faults_common import (api_versions_ok, bootstrap_address, closed_by_peer, connect,  # noqa: E402
                           harness, kw, metric_of, start_gate, wait_metric, write_config)
from scripted_broker import ScriptedBroker  # noqa: E402


def _pid(gate):
    return gate.proc.proc.pid


def _fds(gate):
    return len(os.listdir("/proc/%d/fd" % _pid(gate)))


def _cpu_seconds(gate):
    with open("/proc/%d/stat" % _pid(gate)) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _log_lines(gate, needle):
    with open(gate.proc.log_path, errors="replace") as f:
        return [l for l in f if needle in l]


def _timed_get(gate, path, timeout=5.0):
    """(status or error text, seconds) of one GET on a fresh connection."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen("http://%s%s" % (gate.admin, path), timeout=timeout) as r:
            status = r.status
            r.read()
    except urllib.error.HTTPError as e:
        status = e.code
    except OSError as e:
        status = "error: %s" % e
    return status, time.monotonic() - started


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("%s: not within %.0f s" % (what, timeout))


def _port_accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def _scripted(h, node_ids):
    sb = ScriptedBroker(node_ids)
    h.on_close(sb.close)
    return sb


def test_ten_thousand_nodes_open_bounded_listeners_that_close_when_they_leave(h):
    sb = _scripted(h, range(10000))
    # Every node of the scripted broker is its one listener, which holds 64
    # connections: kept upstream connections (64 nodes x 4 workers) would
    # fill it, and they are not what this test counts.
    gate = start_gate(h, sb.bootstrap, extra_yaml=(
        "workers: 4\n"
        "limits:\n  warm_upstreams_per_broker: 0\n"
        "broker_ports:\n  max_node_id: 255\n  absent_grace_ms: 1000\n"
        "refresher:\n  interval_ms: 300\n  urgent_min_interval_ms: 100\n"))
    wait_metric(gate, "epochgate_listeners", 256, timeout=30, state="listening")
    fds = _fds(gate)
    healthz, healthz_s = _timed_get(gate, "/healthz")
    readyz, readyz_s = _timed_get(gate, "/readyz")
    # A client asking epochgate: the first 256 nodes, at epochgate's addresses.
    c = connect(bootstrap_address(gate))
    h.on_close(c.close)
    c.send(kw.metadata_request(0x4D01, [], version=1))
    md = kw.parse_metadata_response(c.recv_frame(timeout=20), 1)
    nodes = {n: (host, port) for n, (host, port, _) in md["brokers"].items()}
    refusal_lines = _log_lines(gate, "is not advertised")
    h.note("10,000-node Metadata: %d listeners, %d fds in use, /healthz %s in %.3f s, "
           "/readyz %s in %.3f s, %d log lines about refused nodes, %d nodes advertised" % (
               metric_of(gate, "epochgate_listeners", state="listening"), fds, healthz,
               healthz_s, readyz, readyz_s, len(refusal_lines), len(nodes)))
    assert sorted(nodes) == list(range(256)), sorted(nodes)[:5]
    assert all(host == "127.0.0.1" and port != sb.port for host, port in nodes.values())
    for n in (0, 255):
        peer = connect(nodes[n])
        h.on_close(peer.close)
        assert api_versions_ok(peer, corr=10 + n)
    # One descriptor per listener whatever the worker count, plus a small base.
    assert fds < 256 + 80, fds
    assert healthz == 200 and readyz == 200, (healthz, readyz)
    assert len(refusal_lines) <= 60, len(refusal_lines)
    assert metric_of(gate, "epochgate_listeners_refused_total", reason="max_node_id") == 9744
    assert metric_of(gate, "epochgate_listeners", state="listening") == 256

    # The cluster shrinks to three nodes: the other listeners close after the grace.
    left_port = nodes[100][1]
    sb.set_nodes([0, 1, 2])
    started = time.monotonic()
    _wait(lambda: metric_of(gate, "epochgate_listeners", state="listening") == 3, 20,
          "listeners of departed nodes closed")
    closed_s = time.monotonic() - started
    fds_after = _fds(gate)
    readyz_after, _ = _timed_get(gate, "/readyz")
    h.note("after the cluster named 3 nodes: listeners closed in %.2f s (grace 1 s), "
           "%d fds in use, /readyz %s" % (closed_s, fds_after, readyz_after))
    assert not _port_accepts(left_port), "a departed node's port still accepts"
    assert fds_after < fds - 200, (fds, fds_after)
    assert readyz_after == 200
    assert metric_of(gate, "epochgate_listeners_closed_total") >= 253


def _reserve(port=0):
    """A socket bound to 127.0.0.1:port with SO_REUSEADDR that never listens.

    It keeps the port from ephemeral connects and from binds without
    SO_REUSEADDR, while epochgate's listener (it sets SO_REUSEADDR) can still
    bind and listen on it (socket(7): such a bind fails only against an active
    listener), so no other process can take the port between the test
    choosing it and epochgate binding it."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        raise
    return s


def _busy_node_one(h):
    """(base, holder): node 0's port under `base` reserved for epochgate, node
    1's held busy by a listening socket (both stay reserved when it closes)."""
    for _ in range(100):
        low = _reserve()
        base = low.getsockname()[1]
        try:
            high = _reserve(base + 1)
        except OSError:
            low.close()
            continue
        h.on_close(low.close)
        h.on_close(high.close)
        holder = socket.socket()
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", base + 1))
        holder.listen(1)
        h.on_close(holder.close)
        return base, holder
    raise AssertionError("no two adjacent loopback ports to reserve")


def _gate_with_busy_node(h, sb, base):
    return start_gate(h, sb.bootstrap, extra_yaml=(
        "broker_ports:\n  max_node_id: 1\n  bind_retry_max_ms: 1000\n"
        "refresher:\n  interval_ms: 300\n"), args=("--broker-port-base", str(base)))


def _unready_for_node_one(gate):
    # Before the view loads, /readyz is 503 for that reason: wait for this one.
    status, body = gate.http_get("/readyz")
    return status == 503 and "broker node 1" in body


def test_readiness_recovers_when_the_busy_port_frees(h):
    base, holder = _busy_node_one(h)
    sb = _scripted(h, [0, 1])
    gate = _gate_with_busy_node(h, sb, base)
    _wait(lambda: _unready_for_node_one(gate), 10, "/readyz 503 naming node 1")
    assert _log_lines(gate, "no listener for broker node 1"), "bind failure not logged"
    holder.close()
    started = time.monotonic()
    _wait(lambda: gate.http_get("/readyz")[0] == 200, 10, "/readyz 200 after the port freed")
    recovered_s = time.monotonic() - started
    h.note("port of node 1 freed: /readyz 200 after %.2f s (bind_retry_max_ms 1000)" % recovered_s)
    assert _port_accepts(base + 1)
    c = connect(bootstrap_address(gate))
    h.on_close(c.close)
    c.send(kw.metadata_request(0x4D02, [], version=1))
    md = kw.parse_metadata_response(c.recv_frame(timeout=10), 1)
    assert md["brokers"][1][1] == base + 1, md["brokers"]
    assert metric_of(gate, "epochgate_listener_bind_failures_total") >= 1


def test_readiness_recovers_when_the_cluster_stops_naming_the_node(h):
    base, holder = _busy_node_one(h)
    sb = _scripted(h, [0, 1])
    gate = _gate_with_busy_node(h, sb, base)
    _wait(lambda: _unready_for_node_one(gate), 10, "/readyz 503 naming node 1")
    sb.set_nodes([0])
    started = time.monotonic()
    _wait(lambda: gate.http_get("/readyz")[0] == 200, 10,
          "/readyz 200 after the cluster stopped naming node 1")
    h.note("node 1 left the cluster: /readyz 200 after %.2f s (refresh every 300 ms)" % (
        time.monotonic() - started))
    # Clients get what the cluster says: node 0 only.
    c = connect(bootstrap_address(gate))
    h.on_close(c.close)
    c.send(kw.metadata_request(0x4D03, [], version=1))
    md = kw.parse_metadata_response(c.recv_frame(timeout=10), 1)
    assert sorted(md["brokers"]) == [0], md["brokers"]


def test_idle_admin_connections_do_not_lock_out_probes(h):
    cluster = h.start_cluster(1, ["probes:1:1"])
    gate = start_gate(h, cluster.bootstrap, extra_yaml="admin:\n  idle_timeout_ms: 2000\n")
    host, port = gate.admin.rsplit(":", 1)
    idle = []
    for _ in range(100):
        s = socket.create_connection((host, int(port)), timeout=5)
        h.on_close(s.close)
        s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        s.recv(4096)
        idle.append(s)
    results = [_timed_get(gate, "/healthz") for _ in range(5)]
    worst = max(t for _, t in results)
    h.note("100 idle keep-alive admin connections: /healthz %s, slowest %.3f s" % (
        [s for s, _ in results], worst))
    assert all(s == 200 for s, _ in results), results
    assert worst < 1.0, worst
    assert metric_of(gate, "epochgate_admin_connections_evicted_total", reason="idle") >= 1
    # Idle keep-alive connections do not live long either.
    started = time.monotonic()
    deadline = started + 6
    open_left = len(idle)
    for s in idle:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if s.recv(1) == b"":
                open_left -= 1
        except socket.timeout:
            pass
        except OSError:
            open_left -= 1
    assert open_left == 0, "%d idle admin connections outlived admin.idle_timeout_ms" % open_left
    # /debug stays answered on the loopback address it is asked from.
    assert gate.http_get("/debug/config")[0] == 200


def _wrapper_with_nofile(h, limit):
    path = os.path.join(h.workdir, "epochgate-nofile")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec /usr/bin/prlimit --nofile=%d:%d %s \"$@\"\n" % (
            limit, limit, h.epochgate_path))
    os.chmod(path, 0o755)
    return path


def test_descriptor_limit_warns_and_accept_backs_off(h):
    limit = 200
    # The scripted broker accepts every upstream connection at once (the mock
    # cluster's small listen backlog would stall a burst of them).
    sb = ScriptedBroker([0], max_connections=256)
    h.on_close(sb.close)
    real = h.epochgate_path
    h.epochgate_path = _wrapper_with_nofile(h, limit)
    try:
        gate = start_gate(h, sb.bootstrap, extra_yaml="workers: 1\n")
    finally:
        h.epochgate_path = real
    warn = _log_lines(gate, "descriptor limit %d" % limit)
    assert warn and "limits.max_connections 10000" in warn[0], warn
    # The budget is stated at start whether or not it suffices.
    stated = _log_lines(gate, "descriptors: limit %d" % limit)
    assert stated and "up to %d" % metric_of(gate, "epochgate_fds_needed") in stated[0], stated
    assert metric_of(gate, "epochgate_fd_limit") == limit
    assert metric_of(gate, "epochgate_fds_needed") > limit

    clients = []
    for i in range(130):
        c = connect(bootstrap_address(gate), timeout=5)
        h.on_close(c.close)
        c.send(kw.api_versions_request(1000 + i, 0))
        clients.append(c)
    time.sleep(1.5)
    answered, waiting = [], []
    for c in clients:
        try:
            c.recv_frame(timeout=0.05)
            answered.append(c)
        except (socket.timeout, kw.WireError, OSError):
            waiting.append(c)

    def shortages():
        return (metric_of(gate, "epochgate_accept_errors_total", reason="emfile") +
                metric_of(gate, "epochgate_accept_errors_total", reason="fd_reserve"))
    errors = _wait(shortages, 10, "a descriptor shortage counted")
    cpu0 = _cpu_seconds(gate)
    time.sleep(2.0)
    cpu = _cpu_seconds(gate) - cpu0
    errors2 = shortages()
    fds = _fds(gate)
    healthz, healthz_s = _timed_get(gate, "/healthz")
    lines = _log_lines(gate, "accepting client connections paused")
    still_open = [c for c in waiting if not closed_by_peer(c, 0.05)]
    h.note("RLIMIT_NOFILE %d: %d clients answered, %d waiting (%d still open), %d fds in use, "
           "shortages counted %d -> %d in 2 s, CPU %.2f s in 2 s, %d log lines, /healthz %s in "
           "%.3f s" % (limit, len(answered), len(waiting), len(still_open), fds, errors, errors2,
                       cpu, len(lines), healthz, healthz_s))
    assert answered and waiting, (len(answered), len(waiting))
    assert healthz == 200, "probes lost at the descriptor limit: %s" % healthz
    assert fds <= limit - 16, "the descriptor reserve was not kept: %d of %d in use" % (fds, limit)
    assert cpu < 0.5, "accepting spins at the descriptor limit: %.2f s CPU in 2 s" % cpu
    assert len(lines) <= 40, len(lines)
    assert len(still_open) == len(waiting), "waiting clients were closed, not kept waiting"
    # Free descriptors: the waiting clients are served, not dropped.
    for c in answered:
        c.close()
    served = 0
    deadline = time.monotonic() + 15
    for c in still_open[:len(answered)]:
        try:
            kw.parse_api_versions_response(
                c.recv_frame(timeout=max(0.1, deadline - time.monotonic())), 0)
            served += 1
        except (socket.timeout, kw.WireError, OSError):
            pass
    h.note("after %d clients left: %d of the first %d waiting clients served" % (
        len(answered), served, min(len(answered), len(still_open))))
    assert served == min(len(answered), len(still_open)), served


if __name__ == "__main__":
    harness.main(globals())
