"""Security properties through a real epochgate:

- it connects only to the configured bootstrap brokers and the brokers they
  advertise, never to an address a client names (a canary listener whose
  address clients put in topic names, client ids and coordinator keys is never
  dialled; every outbound socket of the epochgate process goes to a mock
  broker port);
- the admin server binds 127.0.0.1 when nothing else is configured;
- /debug/* answers only requests whose Host is localhost, a literal address
  or the admin listener's own host: a DNS-rebound name gets 403 (a web page
  in a browser on the node cannot read the config or the metadata view);
- SASL frames cross byte-identical and their bytes never reach the log, even
  at trace level;
- no client-chosen value grows the number of metric series;
- a setting that weakens security is warned about at start and listed in
  /debug/config;
- in sidecar mode a SCRAM login's salted-password derivation (PBKDF2, up
  to 100000 iterations) runs off the worker's loop: other clients on the
  worker are served while it is pending."""

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.request

from faults_common import (api_versions_ok, bootstrap_address, connect, harness, kw,  # noqa: E402
                           node_addresses, samples, start_gate)
from epochgate_testlib.scram_broker import ScramBroker  # noqa: E402

TOPIC = "secure"


class Canary:
    """A loopback listener that counts every connection made to it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            c.close()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def _tcp_table(netns_of=None):
    """{inode: (local_port, remote_ip_hex, remote_port, state)} of IPv4/IPv6 TCP
    sockets of this network namespace, or of process `netns_of`'s."""
    table = {}
    base = "/proc/net" if netns_of is None else "/proc/%d/net" % netns_of
    for path in (base + "/tcp", base + "/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    local, remote, state, inode = parts[1], parts[2], parts[3], int(parts[9])
                    rip, rport = remote.rsplit(":", 1)
                    table[inode] = (int(local.rsplit(":", 1)[1], 16), rip, int(rport, 16), state,
                                    local.rsplit(":", 1)[0])
        except OSError:
            pass
    return table


def _process_sockets(pid, netns_of=None):
    """[(local_port, remote_ip_hex, remote_port, state, local_ip_hex)] of a process
    (`netns_of`: read the TCP table of that process's network namespace)."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    table = _tcp_table(netns_of)
    return [table[i] for i in inodes if i in table]


def _outbound_ports(pid):
    """Remote ports of the process's established connections that it dialled
    (local port is not one it listens on)."""
    socks = _process_sockets(pid)
    listening = {s[0] for s in socks if s[3] == "0A"}
    return {s[2] for s in socks if s[3] == "01" and s[0] not in listening}


def _find_coordinator_v0(corr, key, client_id):
    return kw.request_frame(10, 0, corr, kw.Writer().string(key).getvalue(), client_id=client_id)


def test_never_dials_an_address_a_client_names(h):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    canary = Canary()
    h.on_close(canary.close)
    gate = start_gate(h, cluster.bootstrap)
    named = "127.0.0.1:%d" % canary.port
    conn = connect(bootstrap_address(gate))
    h.on_close(conn.close)
    nodes = node_addresses(conn)
    conn.send(kw.request_frame(kw.API_API_VERSIONS, 0, 2, b"", client_id=named))
    conn.recv_frame()
    conn.send(kw.metadata_request(3, [named, "localhost:%d" % canary.port], version=1))
    conn.recv_frame()
    conn.send(_find_coordinator_v0(4, named, named))
    conn.recv_frame()
    # Every node listener, with the canary in the client id too.
    for node, address in nodes.items():
        c = connect(address)
        c.send(kw.request_frame(kw.API_API_VERSIONS, 0, 5, b"", client_id=named))
        c.recv_frame()
        c.close()
    # A real client through every listener (group coordinator included);
    # epochgate's sockets sampled while it runs.
    check = h.rdkafka_check_async(["--bootstrap", gate.bootstrap, "--topic", TOPIC,
                                   "--messages", "3000", "--rate", "1000", "--idempotent",
                                   "--acks", "all", "--consume-group", named,
                                   "--client-id", named])
    out = set()
    while check.proc.alive():
        out |= _outbound_ports(gate.proc.proc.pid)
        time.sleep(0.05)
    summary = check.result(timeout=60)
    assert summary["acked"] == 3000, summary
    time.sleep(0.5)
    assert canary.hits == 0, "epochgate connected to the address a client named"
    assert len(out) >= 2, "too few outbound connections seen (%s): is /proc readable?" % out
    assert out <= set(cluster.ports), "epochgate dialled %s; brokers are %s" % (
        sorted(out), sorted(cluster.ports))
    h.note("outbound ports %s, all mock brokers; canary hits 0" % sorted(out))


class _Owned:
    """A harness.Process the harness stops at teardown."""

    def __init__(self, proc):
        self.proc = proc

    def stop(self):
        return self.proc.stop()


def _private_netns():
    """(run prefix, enter prefix) for a fresh network namespace whose only
    interface is its own loopback, or None where the machine allows none
    (no root and no user namespaces). `run` starts a command as the
    namespace's first process; `enter PID` runs one inside PID's namespace."""
    unshare, nsenter, ip = (shutil.which(n) for n in ("unshare", "nsenter", "ip"))
    if not (unshare and nsenter and ip):
        return None
    for run_flags, enter_flags in ((["--net"], ["--net"]),
                                   (["--user", "--map-root-user", "--net"],
                                    ["--user", "--net", "--preserve-credentials"])):
        run = [unshare] + run_flags + ["--", "sh", "-c", ip + ' link set lo up && exec "$@"',
                                       "netns"]
        try:
            ok = subprocess.run(run + ["true"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return run, lambda pid, flags=enter_flags: [nsenter, "--target", str(pid)] + flags
    return None


def test_admin_binds_loopback_by_default(h):
    # Started by hand: the harness always passes --admin. In a network
    # namespace of its own (with the mock cluster), so the default port 9644
    # is free whatever else runs on this machine.
    netns = _private_netns()
    if netns is None:
        return _admin_default_on_this_machine(h)
    run, enter = netns
    mock = harness.Process("mockcluster-netns", run + [h.tool("epochgate-mockcluster"),
                                                       "--brokers", "1"], h.workdir, stdin=True)
    h._processes.append(_Owned(mock))
    line = mock.read_line(timeout=15)
    assert line.startswith("BOOTSTRAP "), line
    argv = enter(mock.proc.pid) + [
        h.epochgate_path, "--bootstrap", line.split(" ", 1)[1], "--listen", "127.0.0.1:0",
        "--broker-port-base", "0", "--ready-file", "-"]
    proc = harness.Process("epochgate-default-admin", argv, h.workdir)
    h._processes.append(_Owned(proc))  # stopped (and its log shown) by the harness
    fields = _ready_fields(proc)
    assert fields["admin"] == "127.0.0.1:9644", fields
    listening = [s for s in _process_sockets(proc.proc.pid, netns_of=proc.proc.pid)
                 if s[3] == "0A" and s[0] == 9644]
    assert listening, "no listening socket on 9644"
    assert all(s[4] == "0100007F" for s in listening), "admin bound to %s" % listening
    r = h.run(enter(mock.proc.pid) + [harness.TEST_PYTHON, "-c",
              "import urllib.request as u; print(u.urlopen('http://127.0.0.1:9644/healthz', "
              "timeout=5).status)"], timeout=20)
    assert r.stdout.strip() == "200", r.stdout
    assert proc.stop() == 0
    h.note("default admin address 127.0.0.1:9644 (in a private network namespace)")


def _ready_fields(proc):
    line = ""
    deadline = time.monotonic() + 20
    while not line.startswith("epochgate ready "):
        line = proc.read_line(timeout=max(0.1, deadline - time.monotonic()))
    return harness.ready_fields(line)


def _admin_default_on_this_machine(h):
    """Where no private network namespace can be made: the same check on
    this machine's loopback, which needs port 9644 free."""
    cluster = h.start_cluster(1, [])
    argv = [h.epochgate_path, "--bootstrap", cluster.bootstrap, "--listen", "127.0.0.1:0",
            "--broker-port-base", "0", "--ready-file", "-"]
    proc = harness.Process("epochgate-default-admin", argv, h.workdir)
    h._processes.append(_Owned(proc))
    try:
        fields = _ready_fields(proc)
    except AssertionError:
        if "in use" in proc.tail():
            raise harness.Skip("no network namespace here (unshare) and port 9644 (the default "
                               "admin port) is taken on this machine")
        raise
    assert fields["admin"] == "127.0.0.1:9644", fields
    listening = [s for s in _process_sockets(proc.proc.pid) if s[3] == "0A" and s[0] == 9644]
    assert listening, "no listening socket on 9644"
    assert all(s[4] == "0100007F" for s in listening), "admin bound to %s" % listening
    with urllib.request.urlopen("http://127.0.0.1:9644/healthz", timeout=5) as r:
        assert r.status == 200
    assert proc.stop() == 0


class SaslBroker:
    """A loopback broker that answers ApiVersions v0 (as every broker does
    before a login), SaslHandshake v1 (PLAIN) and SaslAuthenticate v1
    (success), and records the SASL frames it reads and writes. Other
    requests (epochgate's refresher's Metadata) get no answer."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.received = []
        self.sent = []
        self._conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        buf = b""
        try:
            while True:
                chunk = c.recv(1 << 16)
                if not chunk:
                    return
                buf += chunk
                frames, buf = kw.split_frames(buf)
                for f in frames:
                    key, corr = int.from_bytes(f[4:6], "big"), kw.frame_correlation_id(f, True)
                    if key == 17:
                        body = kw.Writer().int16(0).array(["PLAIN"], lambda w, m: w.string(m))
                    elif key == 36:
                        body = kw.Writer().int16(0).string(None).bytes_(b"").int64(0)
                    elif key == 18:
                        # A SASL listener answers ApiVersions before any login
                        # (KIP-152); epochgate asks on every new connection.
                        # Not recorded: the test compares the client's frames.
                        keys = [(17, 0, 1), (18, 0, 0), (36, 0, 1)]
                        body = kw.Writer().int16(0).array(
                            keys, lambda w, k: w.int16(k[0]).int16(k[1]).int16(k[2]))
                        payload = kw.Writer().int32(corr).getvalue() + body.getvalue()
                        c.sendall(len(payload).to_bytes(4, "big") + payload)
                        continue
                    else:
                        continue
                    self.received.append(f)
                    payload = kw.Writer().int32(corr).getvalue() + body.getvalue()
                    out = len(payload).to_bytes(4, "big") + payload
                    self.sent.append(out)
                    c.sendall(out)
        except OSError:
            pass

    def close(self):
        for s in [self.sock] + self._conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def test_sasl_bytes_pass_untouched_and_never_logged(h):
    broker = SaslBroker()
    h.on_close(broker.close)
    gate = start_gate(h, "127.0.0.1:%d" % broker.port, args=["--log-level", "trace"])
    secret = b"\x00alice-S3CR3T-MARKER\x00hunter2-S3CR3T-MARKER"
    handshake = kw.request_frame(17, 1, 21, kw.Writer().string("PLAIN").getvalue())
    authenticate = kw.request_frame(36, 1, 22, kw.Writer().bytes_(secret).getvalue())
    conn = connect(bootstrap_address(gate))
    h.on_close(conn.close)
    conn.send(handshake)
    first = conn.recv_frame(timeout=10)
    conn.send(authenticate)
    second = conn.recv_frame(timeout=10)
    # Byte-identical both ways.
    assert broker.received == [handshake, authenticate], broker.received
    assert [first, second] == broker.sent, ([first, second], broker.sent)
    conn.close()
    gate.stop()
    with open(gate.proc.log_path, "rb") as f:
        log = f.read()
    assert b"debug" in log, "the log has no debug lines: is the level applied?"
    forms = [b"S3CR3T-MARKER", b"S3CR3T-MARKER".hex().encode(),
             b"S3CR3T-MARKER".hex().upper().encode(), base64.b64encode(secret),
             b"alice-S3CR3T", b"hunter2"]
    leaked = [f for f in forms if f in log]
    assert not leaked, "SASL credential bytes in epochgate's log: %s" % leaked
    h.note("SASL handshake + authenticate crossed byte-identical both ways; %d log bytes at "
           "trace, no secret in any form" % len(log))


def test_client_chosen_values_never_grow_metric_series(h):
    cluster = h.start_cluster(1, ["%s:1:1" % TOPIC])
    gate = start_gate(h, cluster.bootstrap)
    conn = connect(bootstrap_address(gate))
    h.on_close(conn.close)
    assert api_versions_ok(conn, corr=1)
    conn.send(kw.metadata_request(2, [TOPIC], version=1))
    conn.recv_frame()
    before = {(n, tuple(sorted(l.items()))) for n, l, _ in samples(gate.metrics())}
    # 200 unknown API keys and versions, each with its own client id, each on
    # its own connection (a broker closes on an API it does not know).
    for i in range(200):
        c = connect(bootstrap_address(gate), timeout=5)
        try:
            c.send(kw.request_frame(100 + i, i % 50, 1000 + i, b"\x00" * (i % 7),
                                    client_id="client-%d" % i))
            try:
                c.recv_frame(timeout=0.5)
            except (OSError, kw.WireError):
                pass
        finally:
            c.close()
    # 200 distinct topic names and client ids on one connection.
    for i in range(200):
        conn.send(kw.request_frame(kw.API_METADATA, 1, 3000 + i,
                                   kw.Writer().array(["hostile-%d" % i], lambda w, t: w.string(t))
                                   .getvalue(), client_id="id-%d" % i))
        conn.recv_frame()
    after = {(n, tuple(sorted(l.items()))) for n, l, _ in samples(gate.metrics())}
    new = after - before
    labels = {v for _, l in new for _, v in l}
    assert not any(v.startswith(("client-", "id-", "hostile-")) for v in labels), labels
    assert len(new) <= 40, "%d new series: %s" % (len(new), sorted(new)[:20])
    h.note("400 hostile requests added %d series (labels %s)" % (len(new), sorted(labels)[:12]))


def _get(address, path, host):
    """(status, body) of GET path with the given Host header."""
    import http.client
    conn = http.client.HTTPConnection(address[0], address[1], timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", host)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, r.read().decode(errors="replace")
    finally:
        conn.close()


def test_debug_refuses_foreign_host_names(h):
    cluster = h.start_cluster(1, ["%s:1:1" % TOPIC])
    gate = start_gate(h, cluster.bootstrap)
    host, port = gate.admin.rsplit(":", 1)
    admin = (host, int(port))
    for path in ("/debug/config", "/debug/metadata"):
        for foreign in ("attacker.example", "attacker.example:%s" % port, "127.0.0.1.nip.io"):
            status, body = _get(admin, path, foreign)
            assert status == 403, "%s with Host %s: %d %s" % (path, foreign, status, body[:80])
        for ours in ("localhost:%s" % port, "127.0.0.1:%s" % port, "LOCALHOST", "[::1]:%s" % port):
            status, body = _get(admin, path, ours)
            assert status == 200, "%s with Host %s: %d %s" % (path, ours, status, body[:80])
    # The operational endpoints stay reachable under any name (probes, scrapers).
    assert _get(admin, "/metrics", "attacker.example")[0] == 200
    assert _get(admin, "/healthz", "attacker.example")[0] == 200


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out after %.0fs waiting for %s" % (timeout, what)
        time.sleep(0.005)


def test_scram_derivation_never_stalls_other_connections(h):
    # A broker asking for the most iterations epochgate accepts (100000,
    # SHA-512) with a new salt per login: every login of the sidecar needs
    # its own PBKDF2. With one libuv pool thread the derivations queue up;
    # a logged-in client's request on the same worker must be answered
    # while they are still pending.
    broker = ScramBroker("alice", "alice-secret", iterations=100000)
    h.on_close(broker.close)
    pw = os.path.join(h.workdir, "password")
    with open(pw, "w") as f:
        f.write("alice-secret\n")
    yaml = ("workers: 1\nupstream_sasl:\n  mechanism: SCRAM-SHA-512\n  username: alice\n"
            "  password_file: %s\n  on_behalf_of_clients: true\n" % pw)
    old = os.environ.get("UV_THREADPOOL_SIZE")
    os.environ["UV_THREADPOOL_SIZE"] = "1"
    try:
        gate = start_gate(h, broker.bootstrap, extra_yaml=yaml)
    finally:
        if old is None:
            del os.environ["UV_THREADPOOL_SIZE"]
        else:
            os.environ["UV_THREADPOOL_SIZE"] = old
    first = connect(bootstrap_address(gate))
    h.on_close(first.close)
    api_versions_ok(first, corr=1)  # logged in (one derivation, then cached)
    broker.hold = threading.Event()
    h.on_close(broker.hold.set)
    broker.fresh_salts = True
    mark = broker.mark()
    slow = []
    for i in range(6):
        c = connect(bootstrap_address(gate))
        h.on_close(c.close)
        c.send(kw.api_versions_request(100 + i, 0))
        slow.append(c)
    _wait(lambda: broker.count("server_first", mark) >= len(slow), 30,
          "the broker's server-first message on 6 new logins")
    first.send(kw.api_versions_request(2, 0))
    frame = first.recv_frame(timeout=10)
    # What epochgate had written when the answer came: on the loop, each
    # derivation's client-final goes out before the next event is read.
    pending = len(slow) - broker.client_finals_sent()
    assert kw.frame_correlation_id(frame, False) == 2
    assert pending > 0, ("the logged-in client was answered only after all 6 SCRAM "
                         "derivations had finished: they ran on the worker's loop")
    broker.hold.set()
    for i, c in enumerate(slow):  # and the queued logins all complete
        api_versions_ok(c, corr=100 + i, timeout=30)
    h.note("a logged-in client answered while %d of 6 SCRAM derivations (100000 iterations, "
           "SHA-512) were still pending" % pending)


def test_security_warnings_at_start_and_in_debug_config(h):
    # A setting that weakens security (here upstream_sasl PLAIN without
    # upstream_tls: the password crosses in cleartext) is said at start in
    # the log and listed in /debug/config, not only by --check-config.
    broker = ScramBroker("alice", "alice-secret", iterations=4096)
    h.on_close(broker.close)
    pw = os.path.join(h.workdir, "password")
    with open(pw, "w") as f:
        f.write("alice-secret\n")
    gate = start_gate(h, broker.bootstrap, extra_yaml=(
        "upstream_sasl:\n  mechanism: PLAIN\n  username: alice\n  password_file: %s\n" % pw))
    status, body = gate.http_get("/debug/config")
    assert status == 200, status
    warnings = json.loads(body).get("security_warnings")
    assert warnings and any("cleartext" in w for w in warnings), warnings
    with open(gate.proc.log_path, errors="replace") as f:
        log = f.read()
    assert re.search(r"warn.*security: .*cleartext", log), log[-1500:]
    h.note("/debug/config security_warnings: %s" % warnings)


if __name__ == "__main__":
    harness.main(globals())
