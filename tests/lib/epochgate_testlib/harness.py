"""Integration test harness: real peers against the embedded mock cluster,
through epochgate (or straight at the cluster with --direct).

Owns: starting/stopping epochgate-mockcluster and epochgate, sending mock
cluster commands, running client peers (kcat, epochgate-rdkafka-check,
kafka-python and confluent-kafka via client_peer.py) with timeouts, per-test
work directories with every log, and a tiny test runner that prints one
summary line. It must never leave a process behind, never bind anything but
127.0.0.1, and never wait without a deadline.

Every test file ends with `harness.main(globals())` and runs as
    PYTHONPATH=tests/lib /usr/bin/python3 tests/integration/test_x.py --build-dir BUILD [--direct]
Exit codes: 0 every test ran and passed; 1 a test failed; 77 (ctest:
"Skipped") at least one test did not run (a missing peer, or no epochgate
binary) and none failed. A skip is never green: each one prints a line
"SKIP file.test: reason" that tools/ctest_summary.py lists at the end of
`make test`, and with CI=true in the environment a skip is a failure.
Teardown problems (epochgate not exiting 0, which is how sanitizer reports
surface) fail a test even when it was skipped.
"""

import argparse
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request

from . import test_area

# The integration tests' folder: client_peer.py, the peers' sources.
HERE = test_area("integration")
LOOPBACK = "127.0.0.1"
SKIP_RETURN_CODE = 77
TEST_PYTHON = "/usr/bin/python3"  # sees Debian's python3-kafka / python3-confluent-kafka


class Skip(Exception):
    """Raised by a test that cannot run here (missing peer, etc.)."""


class TestTimeout(Exception):
    """A test ran past its deadline."""


# ------------------------------------------------------------------ processes

class LineQueue:
    """Reads a pipe line by line on a thread, so reads can time out."""

    def __init__(self, pipe, tee=None):
        self.lines = queue.Queue()
        self.tee = tee
        self.thread = threading.Thread(target=self._run, args=(pipe,), daemon=True)
        self.thread.start()

    def _run(self, pipe):
        for raw in iter(pipe.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            if self.tee is not None:
                self.tee.write(line + "\n")
                self.tee.flush()
            self.lines.put(line)
        self.lines.put(None)  # EOF

    def get(self, timeout):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("no line within %.1fs" % timeout)


class Process:
    """A child process with its stderr in a log file and stdout as lines."""

    def __init__(self, name, argv, workdir, stdin=False):
        self.name = name
        self.argv = argv
        self.log_path = os.path.join(workdir, name + ".log")
        self.stdout_path = os.path.join(workdir, name + ".stdout")
        self._log = open(self.log_path, "ab")
        self._stdout_copy = open(self.stdout_path, "a")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=self._log, cwd=workdir, start_new_session=True)
        self.out = LineQueue(self.proc.stdout, tee=self._stdout_copy)
        self.returncode = None

    def alive(self):
        return self.proc.poll() is None

    def read_line(self, timeout):
        line = self.out.get(timeout)
        if line is None:
            raise AssertionError("%s exited (rc=%s) before printing the expected line; log: %s"
                                 % (self.name, self.proc.poll(), self.tail()))
        return line

    def stop(self, sig=signal.SIGTERM, timeout=15.0):
        """Signals the process, waits up to `timeout`, then kills it. Returns
        its exit code (negative: killed by that signal)."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc.poll() is None:
            self.kill()
        self.returncode = self.proc.returncode
        self._close_files()
        return self.returncode

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: only its children
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._close_files()

    def _close_files(self):
        for f in (self.proc.stdin, self._log):
            try:
                if f:
                    f.close()
            except (OSError, ValueError):
                pass

    def tail(self, lines=25):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


def ready_fields(line):
    """{name: value} of epochgate's `epochgate ready bootstrap=... admin=...`
    line (--ready-file)."""
    return dict(item.split("=", 1) for item in line.split()[2:] if "=" in item)


def parse_hostport(text):
    host, _, port = text.strip().rpartition(":")
    return host, int(port)


# ---------------------------------------------------------------- mock cluster

class MockCluster:
    """epochgate-mockcluster: librdkafka 2.15.1's mock cluster with a stdin
    command line. See tools/mockcluster/command_shell.h for commands."""

    def __init__(self, harness, brokers, topics, args):
        argv = [harness.tool("epochgate-mockcluster"), "--brokers", str(brokers)]
        for t in topics:
            argv += ["--topic", t]
        self.proc = Process("mockcluster", argv + list(args), harness.workdir, stdin=True)
        self._lock = threading.Lock()
        self._meta_lock = threading.Lock()
        self._meta_conn = None  # metadata(): kept open, see there
        line = self.proc.read_line(timeout=15)
        if not line.startswith("BOOTSTRAP "):
            raise AssertionError("mockcluster said %r instead of BOOTSTRAP" % line)
        self.bootstrap = line.split(" ", 1)[1]
        self.addresses = [parse_hostport(a) for a in self.bootstrap.split(",")]
        self.ports = [p for _, p in self.addresses]

    def cmd(self, line, timeout=15.0, allow_error=False):
        """Sends one command, returns its reply line. Raises on ERR unless
        `allow_error`."""
        with self._lock:
            self.proc.proc.stdin.write((line + "\n").encode())
            self.proc.proc.stdin.flush()
            reply = self.proc.read_line(timeout)
        if not allow_error and not reply.startswith("OK"):
            raise AssertionError("mockcluster %r -> %r" % (line, reply))
        return reply

    def broker_address(self, broker_id):
        return self.addresses[broker_id - 1]

    def metadata(self, topics, timeout=5.0):
        """Metadata v7 straight from the first broker that answers (leader
        epochs included), as parsed by kafka_wire.parse_metadata_response.

        On one connection kept open between calls (a new one only when it
        failed): the mock cluster ends every share session (KIP-932) on a
        broker when any connection to that broker closes, where a Kafka
        broker ends only that connection's, so a connection per query,
        closed at once, made a share consumer's acknowledgements fail with
        SHARE_SESSION_NOT_FOUND whenever a test looked at a partition."""
        from . import kafka_wire as kw
        last = None
        with self._meta_lock:
            if self._meta_conn is not None:
                try:
                    self._meta_conn.send(kw.metadata_request(0x4D44, list(topics), version=7))
                    return kw.parse_metadata_response(self._meta_conn.recv_frame(timeout), 7)
                except (OSError, kw.WireError) as e:
                    last = e
                    self._meta_conn.close()
                    self._meta_conn = None
            for address in self.addresses:
                try:
                    conn = kw.Connection(address[0], address[1], timeout=timeout)
                except OSError as e:
                    last = e
                    continue
                try:
                    conn.send(kw.metadata_request(0x4D44, list(topics), version=7))
                    md = kw.parse_metadata_response(conn.recv_frame(), 7)
                except (OSError, kw.WireError) as e:
                    last = e
                    conn.close()
                    continue
                self._meta_conn = conn
                return md
        raise AssertionError("no broker answered Metadata: %r" % last)

    def partition(self, topic, partition):
        """{'leader', 'leader_epoch', 'replicas', 'isr', ...} of one partition,
        as the cluster itself says (not through epochgate)."""
        return self.metadata([topic])["topics"][topic]["partitions"][partition]

    def move_leader(self, topic, partition, broker_id):
        """Moves leadership and returns (wall clock µs of the move, new epoch)."""
        before = self.partition(topic, partition)["leader_epoch"]
        moved_us = int(time.time() * 1e6)
        self.cmd("leader %s %d %d" % (topic, partition, broker_id))
        after = self.partition(topic, partition)
        if after["leader"] != broker_id or after["leader_epoch"] <= before:
            raise AssertionError("leader move did not take: %s" % after)
        return moved_us, after["leader_epoch"]

    def stop(self):
        if self.proc.alive():
            try:
                self.cmd("quit", timeout=5)
            except (AssertionError, TimeoutError, OSError, ValueError):
                pass
            try:
                self.proc.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        return self.proc.stop()


# ------------------------------------------------------------------ epochgate

class Epochgate:
    """The proxy under test, started with the documented CLI contract. `name`
    names its log and ready files in the harness's workdir, so a second
    epochgate beside the first keeps its own."""

    def __init__(self, harness, upstream_bootstrap, args, name="epochgate"):
        argv = [harness.epochgate_path, "--bootstrap", upstream_bootstrap,
                "--listen", LOOPBACK + ":0", "--broker-port-base", "0",
                "--advertise-host", LOOPBACK, "--admin", LOOPBACK + ":0",
                "--log-level", "debug"] + list(args)
        # The addresses come from --ready-file, as a supervisor would read them.
        ready_file = os.path.join(harness.workdir,
                                  "%s-%d.ready" % (name, len(getattr(harness, "_gates", ()))))
        if os.path.exists(ready_file):
            os.unlink(ready_file)
        argv += ["--ready-file", ready_file]
        self.proc = Process(name, argv, harness.workdir)
        deadline = time.monotonic() + 20
        while not os.path.exists(ready_file):
            if not self.proc.alive():
                raise AssertionError("epochgate exited (rc=%s) before writing %s; log: %s"
                                     % (self.proc.proc.poll(), ready_file, self.proc.tail()))
            if time.monotonic() > deadline:
                raise AssertionError("epochgate wrote no %s within 20 s; log: %s"
                                     % (ready_file, self.proc.tail()))
            time.sleep(0.02)
        with open(ready_file) as f:
            line = f.read().strip()
        assert line.startswith("epochgate ready "), line
        fields = ready_fields(line)
        self.bootstrap = fields["bootstrap"]
        self.admin = fields["admin"]
        self.bootstrap_address = parse_hostport(self.bootstrap)

    def http_get(self, path, timeout=5.0):
        """(status, body text) of GET http://admin/path."""
        try:
            with urllib.request.urlopen("http://%s%s" % (self.admin, path),
                                        timeout=timeout) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def metrics(self):
        status, body = self.http_get("/metrics")
        if status != 200:
            raise AssertionError("/metrics answered %d" % status)
        return body

    def stop(self):
        return self.proc.stop(signal.SIGTERM, timeout=20)


# -------------------------------------------------------------------- harness

class Harness:
    """Per-test fixture: work directory, processes, clients."""

    def __init__(self, options, test_name):
        self.options = options
        self.build_dir = options.build_dir
        self.direct = options.direct
        self.epochgate_path = options.epochgate
        self.test_name = test_name
        self.workdir = os.path.join(self.build_dir, "tests", "integration", "work",
                                    options.file_stem, test_name)
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir)
        self._processes = []
        self._gates = []
        self._closers = []
        self._commands = open(os.path.join(self.workdir, "commands.log"), "a")
        self.notes = []

    # -- tools
    def tool(self, name):
        path = os.path.join(self.build_dir, "tools", name)
        if not os.access(path, os.X_OK):
            raise AssertionError("%s not built (cmake --build %s --target %s)"
                                 % (path, self.build_dir, name))
        return path

    def note(self, text):
        """Informational line shown in the test output (figures, modes)."""
        self.notes.append(text)
        print("    note: " + text, flush=True)

    # -- processes
    def start_cluster(self, brokers=3, topics=(), args=("--rebalance-delay-ms", "0")):
        cluster = MockCluster(self, brokers, topics, args)
        self._processes.append(cluster)
        return cluster

    def start_gate(self, upstream_bootstrap, args=()):
        if self.direct:
            raise AssertionError("start_gate called in --direct mode")
        gate = Epochgate(self, upstream_bootstrap, args)
        self._processes.append(gate)
        self._gates.append(gate)
        return gate

    def front(self, cluster, upstream=None, args=()):
        """Bootstrap list clients should use for `cluster`: epochgate's (started
        here on `upstream`, default the cluster's own list) or, with --direct,
        the cluster's. Returns (bootstrap, gate or None)."""
        if self.direct:
            return (upstream or cluster.bootstrap), None
        gate = self.start_gate(upstream or cluster.bootstrap, args)
        return gate.bootstrap, gate

    def on_close(self, fn):
        self._closers.append(fn)

    def run(self, argv, timeout=60.0, input=None, check=True, name=None):
        """Runs a client to completion with a hard timeout (killed after).
        Returns CompletedProcess with text stdout/stderr."""
        name = name or os.path.basename(argv[0])
        self._commands.write("$ %s\n" % " ".join(argv))
        self._commands.flush()
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=self.workdir,
                                start_new_session=True)
        try:
            out, err = proc.communicate(input=input, timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
            self._log_run(name, proc.returncode, out, err, time.monotonic() - started)
            raise AssertionError("%s timed out after %.0fs: %s" % (name, timeout, _short(err)))
        self._log_run(name, proc.returncode, out, err, time.monotonic() - started)
        result = subprocess.CompletedProcess(argv, proc.returncode,
                                             out.decode(errors="replace"),
                                             err.decode(errors="replace"))
        if check and result.returncode != 0:
            raise AssertionError("%s exited %d: %s %s" % (name, result.returncode,
                                                          _short(result.stdout),
                                                          _short(result.stderr)))
        return result

    def _log_run(self, name, rc, out, err, seconds):
        self._commands.write("rc=%s in %.2fs\n--- stdout\n%s\n--- stderr\n%s\n\n" % (
            rc, seconds, out.decode(errors="replace")[-20000:],
            err.decode(errors="replace")[-20000:]))
        self._commands.flush()

    # -- clients
    def kcat(self, args, input=None, timeout=30.0, check=True):
        kcat = shutil.which("kcat") or shutil.which("kafkacat")
        if kcat is None:
            raise Skip("kcat not installed (apt-get install kcat)")
        return self.run([kcat] + list(args), timeout=timeout, input=input, check=check)

    def rdkafka_check(self, args, timeout=120.0, expect_pass=True):
        """Runs epochgate-rdkafka-check; returns its JSON summary (dict)."""
        result = self.run([self.tool("epochgate-rdkafka-check")] + list(args),
                          timeout=timeout, check=False)
        lines = [l for l in result.stdout.splitlines() if l.startswith("{")]
        if not lines:
            raise AssertionError("rdkafka-check printed no summary (rc=%d): %s"
                                 % (result.returncode, _short(result.stderr)))
        summary = json.loads(lines[-1])
        if expect_pass and (result.returncode != 0 or not summary.get("passed")):
            raise AssertionError("rdkafka-check failed: %s" % lines[-1])
        return summary

    def rdkafka_check_async(self, args, name="rdkafka-check"):
        """Starts epochgate-rdkafka-check in the background (for scenarios that
        act on the cluster while it runs). Call .result(timeout) for its JSON."""
        return BackgroundCheck(self, [self.tool("epochgate-rdkafka-check")] + list(args), name)

    def connected_ports(self, rdkafka_log):
        """Ports a librdkafka client (run with --debug broker and a log file)
        opened TCP connections to."""
        ports = set()
        with open(rdkafka_log, errors="replace") as f:
            for line in f:
                marker = "Connecting to ipv4#"
                at = line.find(marker)
                if at >= 0:
                    addr = line[at + len(marker):].split()[0]
                    ports.add(int(addr.rsplit(":", 1)[1]))
        return ports

    def assert_only_front_connections(self, rdkafka_log, cluster):
        """Through epochgate, a client must never reach an upstream broker
        port (that would mean an address leaked past the rewrite). With
        --direct the client must have reached them (control)."""
        ports = self.connected_ports(rdkafka_log)
        leaked = ports & set(cluster.ports)
        if self.direct:
            assert leaked, "control: direct client never connected to the cluster? %s" % ports
        else:
            assert not leaked, "client connected to upstream ports %s (all: %s)" % (
                sorted(leaked), sorted(ports))
        return ports

    def python_peer(self, args, timeout=90.0):
        """Runs client_peer.py under /usr/bin/python3; returns its JSON result."""
        if not os.access(TEST_PYTHON, os.X_OK):
            raise Skip("%s not found" % TEST_PYTHON)
        result = self.run([TEST_PYTHON, os.path.join(HERE, "client_peer.py")] + list(args),
                          timeout=timeout, check=False, name="client_peer")
        if result.returncode == SKIP_RETURN_CODE:
            raise Skip(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else
                       "python client missing")
        lines = [l for l in result.stdout.splitlines() if l.startswith("{")]
        if not lines:
            raise AssertionError("client_peer printed no result (rc=%d): %s"
                                 % (result.returncode, _short(result.stderr)))
        out = json.loads(lines[-1])
        out["returncode"] = result.returncode
        return out

    # -- teardown
    def close(self):
        """Stops everything; returns a list of problems found while stopping
        (an epochgate that did not exit 0 on SIGTERM is a test failure)."""
        problems = []
        for fn in reversed(self._closers):
            try:
                fn()
            except Exception as e:  # teardown must go on
                problems.append("closer failed: %r" % e)
        for p in reversed(self._processes):
            rc = p.stop()
            if isinstance(p, Epochgate) and rc != 0:
                problems.append("epochgate exited %s on SIGTERM (contract: 0 after draining)" % rc)
        self._commands.close()
        return problems

    def log_tails(self):
        out = []
        for p in self._processes:
            proc = p.proc
            out.append("--- %s (%s) last lines of %s:\n%s" % (
                proc.name, " ".join(proc.argv[:1]), proc.log_path, proc.tail()))
        return "\n".join(out)


class BackgroundCheck:
    """A running epochgate-rdkafka-check."""

    def __init__(self, h, argv, name):
        self.proc = Process(name, argv, h.workdir)
        h._processes.append(self)

    def result(self, timeout=120.0, expect_pass=True):
        """Waits for the summary line; returns it as a dict."""
        deadline = time.monotonic() + timeout
        summary = None
        while True:
            line = self.proc.out.get(max(0.1, deadline - time.monotonic()))
            if line is None:
                break
            if line.startswith("{"):
                summary = json.loads(line)
        try:
            self.proc.proc.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if summary is None:
            raise AssertionError("rdkafka-check printed no summary: %s" % self.proc.tail())
        if expect_pass and (self.proc.proc.returncode != 0 or not summary.get("passed")):
            raise AssertionError("rdkafka-check failed: %s" % json.dumps(summary))
        return summary

    def stop(self):
        return self.proc.stop(signal.SIGTERM, timeout=30)


def read_timeline(path):
    """Rows of an epochgate-rdkafka-check --timeline CSV as dicts of ints."""
    with open(path) as f:
        header = f.readline().strip().split(",")
        return [dict(zip(header, map(int, line.strip().split(",")))) for line in f if line.strip()]


def recovery_ms(rows, moved_us, partition, new_leader):
    """Milliseconds from `moved_us` (wall clock µs) to the first delivery on
    `partition` acknowledged by `new_leader` after the move, or None."""
    acks = [r["ack_us"] for r in rows
            if r["partition"] == partition and r["broker"] == new_leader
            and r["error"] == 0 and r["ack_us"] >= moved_us]
    return (min(acks) - moved_us) / 1000.0 if acks else None


def _short(text, limit=600):
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def free_port_is_closed(port):
    """True if nothing accepts on 127.0.0.1:port."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((LOOPBACK, port)) != 0


def wait_until(predicate, timeout, interval=0.1, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))


# --------------------------------------------------------------------- runner

def _parse_args(argv, file_stem):
    parser = argparse.ArgumentParser(description="epochgate integration test (%s)" % file_stem)
    parser.add_argument("--build-dir", required=True, help="CMake build directory")
    parser.add_argument("--direct", action="store_true",
                        help="clients talk straight to the mock cluster (tests the tests)")
    parser.add_argument("--epochgate", help="epochgate binary (default BUILD/proxy/epochgate)")
    parser.add_argument("-k", dest="filter", default="", help="run tests whose name contains this")
    parser.add_argument("--timeout", type=float, default=120.0, help="per-test deadline (s)")
    options = parser.parse_args(argv)
    options.build_dir = os.path.abspath(options.build_dir)
    options.epochgate = options.epochgate or os.path.join(options.build_dir, "proxy", "epochgate")
    options.file_stem = file_stem
    return options


def in_ci():
    """True when the environment says this is a CI run (CI=true, as GitHub
    Actions, GitLab and most CI systems set it): nothing may be skipped."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def record_skip(name, reason):
    """Prints the greppable SKIP line and appends it to $EPOCHGATE_SKIP_LOG
    (set by tools/ctest_summary.py, which lists every skip at the end)."""
    line = "SKIP %s: %s" % (name, " ".join(reason.split()) or "no reason given")
    print(line, flush=True)
    path = os.environ.get("EPOCHGATE_SKIP_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def _on_alarm(signum, frame):
    raise TestTimeout("test deadline passed")


def main(namespace, argv=None, needs_epochgate=True):
    """Runs every `test_*` function in `namespace` (a module's globals())
    in definition order; prints PASS/FAIL/SKIP per test and one summary line.
    `needs_epochgate=False` marks a file that tests the peers themselves and
    always runs straight at the mock cluster."""
    file_stem = os.path.splitext(os.path.basename(namespace.get("__file__", "tests")))[0]
    options = _parse_args(sys.argv[1:] if argv is None else argv, file_stem)
    if not needs_epochgate:
        options.direct = True
    mode = "direct" if options.direct else "epochgate"
    if not options.direct and not os.access(options.epochgate, os.X_OK):
        reason = "epochgate binary %s not built" % options.epochgate
        if in_ci():
            print("FAIL %s: %s (CI=true: nothing may be skipped)" % (file_stem, reason))
            return sys.exit(1)
        record_skip(file_stem, reason)
        return sys.exit(SKIP_RETURN_CODE)
    tests = [(n, f) for n, f in namespace.items()
             if n.startswith("test_") and callable(f) and options.filter in n]
    signal.signal(signal.SIGALRM, _on_alarm)
    passed = failed = skipped = 0
    started = time.monotonic()
    for name, fn in tests:
        t0 = time.monotonic()
        harness = Harness(options, name)
        status, detail = "PASS", ""
        signal.alarm(int(getattr(fn, "timeout", options.timeout)))
        try:
            fn(harness)
        except Skip as e:
            if in_ci():
                status, detail = "FAIL", "skipped, and CI=true allows no skip: %s" % e
            else:
                status, detail = "SKIP", str(e)
        except BaseException as e:  # includes TestTimeout, AssertionError
            if isinstance(e, KeyboardInterrupt):
                signal.alarm(0)
                harness.close()
                raise
            status, detail = "FAIL", traceback.format_exc()
        finally:
            signal.alarm(0)
        problems = harness.close()
        if problems:
            # Also for a skipped test: whatever it started must stop cleanly.
            status = "FAIL"
            detail += "\n" + "\n".join(problems)
        if status == "FAIL":
            detail += "\n" + harness.log_tails() + "\nwork dir: " + harness.workdir
        print("%s %s.%s [%s] %.1fs" % (status, file_stem, name, mode, time.monotonic() - t0),
              flush=True)
        if status == "SKIP":
            # One greppable line per skipped test (tools/ctest_summary.py).
            record_skip("%s.%s%s" % (file_stem, name, " [direct]" if options.direct else ""),
                        detail)
        elif detail:
            print("    " + detail.strip().replace("\n", "\n    "), flush=True)
        passed += status == "PASS"
        failed += status == "FAIL"
        skipped += status == "SKIP"
    print("%s [%s]: %d passed, %d failed, %d skipped in %.1fs" % (
        file_stem, mode, passed, failed, skipped, time.monotonic() - started), flush=True)
    if failed:
        sys.exit(1)
    if not tests:
        print("FAIL %s: no test matched -k %r" % (file_stem, options.filter), flush=True)
        sys.exit(1)
    if skipped:
        # Not green: ctest shows the file as Skipped even if other tests passed.
        sys.exit(SKIP_RETURN_CODE)
    sys.exit(0)
