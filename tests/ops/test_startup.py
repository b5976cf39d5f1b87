"""Start-up failures and silent misconfiguration, as an operator meets them:
a port in use ends the process with exit 1 and a line naming the port (no
libuv assertion, no "handles still open"); settings that would run without
doing what they say are refused with file, line and reason; a partition
leader that gets no listener (its id over broker_ports.max_node_id) keeps
/readyz at 503 with the reason."""

import os
import re
import socket
import subprocess
import time

from epochgate_testlib import harness  # noqa: E402
from epochgate_testlib import kafka_wire as kw  # noqa: E402

TOPIC = "orders"


def held_port():
    """A loopback port another process's listener holds (this one's)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s, s.getsockname()[1]


def run_gate(h, args, timeout=20):
    argv = [h.epochgate_path, "--bootstrap", "127.0.0.1:9"] + list(args)
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def assert_clean_failure(r, pattern):
    out = r.stdout + r.stderr
    assert r.returncode == 1, "exit %d, expected 1:\n%s" % (r.returncode, out)
    assert re.search(pattern, out, re.I), "no %r in:\n%s" % (pattern, out)
    for bad in ("Assertion", "handles still open", "epochgate ready"):
        assert bad not in out, "%r in:\n%s" % (bad, out)


def test_admin_port_in_use_exits_one(h):
    holder, port = held_port()
    h.on_close(holder.close)
    # The assertion came in some runs only: try several.
    for _ in range(5):
        r = run_gate(h, ["--listen", "127.0.0.1:0", "--admin", "127.0.0.1:%d" % port])
        assert_clean_failure(r, r"start-up failed: admin listen on 127\.0\.0\.1:%d: address already in use" % port)
    h.note(r.stderr.strip().splitlines()[-2])


def test_bootstrap_port_in_use_exits_one(h):
    holder, port = held_port()
    h.on_close(holder.close)
    for _ in range(3):
        r = run_gate(h, ["--listen", "127.0.0.1:%d" % port, "--no-admin"])
        assert_clean_failure(r, r"start-up failed: .*127\.0\.0\.1:%d.*in use" % port)


def config_problem(h, text, line, pattern, flags=()):
    path = os.path.join(h.workdir, "cfg.yaml")
    with open(path, "w") as f:
        f.write(text)
    for mode in (["--check-config", path, "--no-files"], ["--config", path, "--no-admin"]):
        r = subprocess.run([h.epochgate_path] + mode + list(flags), capture_output=True,
                           text=True, timeout=20)
        out = r.stdout + r.stderr
        assert r.returncode == 1, "%s: exit %d:\n%s" % (mode[0], r.returncode, out)
        assert re.search(r"cfg\.yaml:%d:\d+: .*%s" % (line, pattern), out), \
            "%s: no 'cfg.yaml:%d: %s' in:\n%s" % (mode[0], line, pattern, out)


def test_wildcard_listen_without_advertise_host_is_refused(h):
    config_problem(h, "bootstrap_servers: [127.0.0.1:9]\nlisten: 0.0.0.0:0\n", 2,
                   r"listen: 0\.0\.0\.0 is a wildcard .*advertise_host")
    config_problem(h, "bootstrap_servers: [127.0.0.1:9]\nlisten: \"[::]:0\"\n", 2,
                   r"listen: :: is a wildcard")
    config_problem(h, "bootstrap_servers: [127.0.0.1:9]\nlisten: 0.0.0.0:0\n"
                      "advertise_host: 0.0.0.0\n", 3, r"advertise_host: '0\.0\.0\.0' is a wildcard")
    # The flag form is refused the same way (problem located at the flag).
    r = run_gate(h, ["--listen", "0.0.0.0:0", "--no-admin"])
    assert r.returncode == 1 and "--listen: listen: 0.0.0.0 is a wildcard" in r.stderr, r.stderr
    # With an advertised host it starts checking (only the config is checked here).
    path = os.path.join(h.workdir, "ok.yaml")
    with open(path, "w") as f:
        f.write("bootstrap_servers: [127.0.0.1:9]\nlisten: 0.0.0.0:0\n"
                "advertise_host: epochgate.example.internal\n")
    r = subprocess.run([h.epochgate_path, "--check-config", path], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 0, r.stderr


def test_upstream_tls_files_without_enabled_are_refused(h):
    config_problem(h, "bootstrap_servers: [127.0.0.1:9]\nupstream_tls:\n"
                      "  ca_file: /etc/ca.crt\n", 3,
                   r"upstream_tls\.ca_file: is set but upstream_tls\.enabled is not true")


def test_reroute_on_a_rule_whose_mode_is_off_is_refused(h):
    config_problem(h, "bootstrap_servers: [127.0.0.1:9]\npolicy:\n  rules:\n"
                      "    - topics: orders\n      mode: \"off\"\n      reroute: true\n", 6,
                   r"policy\.rules\[0\]\.reroute: reroute: true on a rule whose mode is off")


def test_leader_without_listener_keeps_readyz_503(h):
    """Mock cluster nodes 1..3; max_node_id 1 leaves nodes 2 and 3 without
    a listener. Once the view knows a partition node 2 or 3 leads, /readyz
    is 503 and says which node, which partition and why."""
    cluster = h.start_cluster(3, ["%s:6:3" % TOPIC])
    cfg = os.path.join(h.workdir, "epochgate.yaml")
    with open(cfg, "w") as f:
        f.write("broker_ports:\n  max_node_id: 1\n")
    gate = h.start_gate(cluster.bootstrap, ["--config", cfg])
    c = kw.Connection(*gate.bootstrap_address, timeout=10)
    h.on_close(c.close)
    c.send(kw.metadata_request(7, [TOPIC], version=1))
    c.recv_frame(timeout=10)
    deadline = time.monotonic() + 15
    status, body = gate.http_get("/readyz")
    while time.monotonic() < deadline and not (status == 503 and "leads" in body):
        time.sleep(0.1)
        status, body = gate.http_get("/readyz")
    h.note("/readyz %d: %s" % (status, body.strip()))
    assert status == 503, (status, body)
    assert re.search(r"broker node [23] leads %s\[\d+\] but has no listener: its id is over "
                     r"broker_ports\.max_node_id 1" % TOPIC, body), body


if __name__ == "__main__":
    harness.main(globals())
