#!/usr/bin/python3
"""bench/tls_bench.py: TLS on both sides, epochgate against HAProxy doing the
same TLS termination and origination, in one run (bench/run.sh --tls runs
it; never part of the test suite).

Owns: the TLS benchmark table. The cluster is the librdkafka 2.15.1 mock
cluster behind Debian's HAProxy as each broker's TLS listener
(tools/tls/tls_rig.py, certificates from tools/tls/make-certs.sh), one
such cluster per subject, all up for the whole run; the rounds alternate
the subjects (rotated order) so the shared machine's noise falls on both:
  haproxy    a second HAProxy terminating the clients' TLS and opening TLS to
             each broker listener (verify required, SNI), one frontend per
             broker; the brokers advertise its ports
  epochgate  `tls` + `upstream_tls`; the brokers advertise their TLS listeners
For each: produce throughput (epochgate-rdkafka-check, librdkafka 2.15.1,
acks=1, SSL), consume throughput (kcat reading everything back, SSL), the
proxy's CPU seconds per GB (utime + stime from /proc), and its resident
memory with 1,000 idle TLS client connections (handshakes done, nothing
sent). Every process it starts is stopped; everything binds 127.0.0.1.

  bench/tls_bench.py --build-dir BUILD [--messages N] [--size BYTES]
                     [--rounds R] [--idle 1000] [--out FILE.md]
                     [--subjects haproxy,epochgate[,epochgate-whole]]

`epochgate-whole` is epochgate with `limits.stream_fetch_min_bytes: 0`: every
Fetch response read whole before it is forwarded, for a before/after
comparison of streaming within one run.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "tls"))
import tls_rig  # noqa: E402

TOPIC = "bench"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


class Mock:
    # librdkafka's mock keeps about 5 MB per partition: 12 partitions give
    # the consume runs some 60 MB to read.
    def __init__(self, build, workdir, partitions=12):
        argv = [os.path.join(build, "tools", "epochgate-mockcluster"), "--brokers", "3",
                "--topic", "%s:%d:1" % (TOPIC, partitions)]
        self.log = open(os.path.join(workdir, "mockcluster.log"), "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, start_new_session=True)
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "BOOTSTRAP", line
        self.addresses = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1]))
                          for a in line[1].split(",")]

    def cmd(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        assert reply.startswith("OK"), (line, reply)

    def advertise(self, addresses):
        for i, (host, port) in enumerate(addresses, start=1):
            self.cmd("advertise %d %s %d" % (i, host, port))

    def stop(self):
        try:
            self.cmd("quit")
            self.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - stopping must go on
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()


class Gate:
    """epochgate with TLS on both sides, started with the CLI contract."""

    def __init__(self, build, workdir, certs, upstream, name="epochgate", limits=None):
        config = os.path.join(workdir, name + "-tls.yaml")
        doc = {"tls": {"cert_file": certs.path("server", "crt"),
                       "key_file": certs.path("server", "key")},
               "upstream_tls": {"enabled": True, "ca_file": certs.ca}}
        if limits:
            doc["limits"] = limits
        with open(config, "w") as f:
            json.dump(doc, f)
        argv = [os.path.join(build, "proxy", "epochgate"), "--config", config, "--bootstrap",
                ",".join("%s:%d" % a for a in upstream), "--listen", "127.0.0.1:0",
                "--broker-port-base", "0", "--advertise-host", "127.0.0.1",
                "--admin", "127.0.0.1:0", "--log-level", "warn", "--ready-file", "-"]
        self.log = open(os.path.join(workdir, name + ".log"), "ab")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("epochgate exited %s (see %s)" % (self.proc.wait(),
                                                                     self.log.name))
            if line.startswith("epochgate ready "):
                fields = dict(i.split("=", 1) for i in line.split()[2:] if "=" in i)
                self.bootstrap = fields["bootstrap"]
                self.pid = self.proc.pid
                return
        raise RuntimeError("epochgate not ready in 20 s")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()


def produce(build, bootstrap, certs, messages, size, workdir):
    """(seconds, bytes) of an acks=1 produce of `messages` records over SSL."""
    r = subprocess.run([os.path.join(build, "tools", "epochgate-rdkafka-check"), "--bootstrap",
                        bootstrap, "--topic", TOPIC, "--messages", str(messages),
                        "--message-size", str(size), "--acks", "1", "--partitions-keyed",
                        "--no-warmup", "--no-markers", "--allow-duplicates",
                        "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + certs.ca,
                        "-X", "linger.ms=20", "-X", "batch.size=1000000"],
                       capture_output=True, text=True, timeout=600)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if not lines:
        raise RuntimeError("rdkafka-check: %s" % r.stderr[-500:])
    s = json.loads(lines[-1])
    if s["acked"] != messages:
        raise RuntimeError("produce acked %d of %d: %s" % (s["acked"], messages, lines[-1]))
    return s["seconds"], messages * size


def consume(bootstrap, certs, expect):
    """(seconds, bytes, count) of kcat reading the topic over SSL."""
    t0 = time.monotonic()
    # The mock cluster keeps only the newest few MB of each partition, so
    # kcat reads what is retained (-e: to the end of every partition).
    r = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", TOPIC, "-o", "beginning",
                        "-e", "-q", "-f", "%S\n", "-X", "security.protocol=ssl",
                        "-X", "ssl.ca.location=" + certs.ca,
                        "-X", "fetch.message.max.bytes=4194304"],
                       capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - t0
    sizes = [int(x) for x in r.stdout.split()]
    # Only what the mock retained is there to read (about 5 MB a partition).
    if sum(sizes) < min(expect * 1000 // 4, 20 * 1000 * 1000):
        raise RuntimeError("kcat read only %d records (%d bytes) of %d produced: %s"
                           % (len(sizes), sum(sizes), expect, r.stderr[-300:]))
    return seconds, sum(sizes), len(sizes)


def idle_rss(pid, port, certs, count):
    """(RSS MiB before, RSS MiB with `count` idle TLS connections, opened)."""
    before = rss_mib(pid)
    ctx = ssl.create_default_context(cafile=certs.ca)
    conns = []
    try:
        for _ in range(count):
            raw = socket.create_connection(("127.0.0.1", port), timeout=10)
            conns.append(ctx.wrap_socket(raw, server_hostname="127.0.0.1"))
        time.sleep(2)
        return before, rss_mib(pid), len(conns)
    finally:
        for c in conns:
            c.close()


class Subject:
    """One proxy under test with its own mock cluster and HAProxy broker
    fronts, up for the whole run so the rounds can alternate."""

    def __init__(self, name, opts, certs, workdir):
        self.name, self.stops = name, []
        self.mock = Mock(opts.build_dir, workdir)
        self.stops.append(self.mock.stop)
        self.fronts = tls_rig.broker_fronts(workdir, certs, self.mock.addresses,
                                            name="haproxy-brokers-" + name)
        self.stops.append(self.fronts.stop)
        if name == "haproxy":
            mid = tls_rig.HAProxy(workdir, certs, [
                tls_rig.Frontend(a, upstream_tls={"ca": certs.ca, "sni": "localhost"},
                                 name="mid%d" % i) for i, a in enumerate(self.fronts.addresses)],
                                  name="haproxy-mid").start()
            self.stops.append(mid.stop)
            self.mock.advertise(mid.addresses)
            self.pid, self.bootstrap = mid.proc.pid, ",".join("%s:%d" % a for a in mid.addresses)
        else:
            self.mock.advertise(self.fronts.addresses)
            # epochgate-whole: every Fetch response read whole before it is
            # forwarded (store and forward, as before streaming).
            limits = {"stream_fetch_min_bytes": 0} if name == "epochgate-whole" else None
            gate = Gate(opts.build_dir, workdir, certs, self.fronts.addresses, name, limits)
            self.stops.append(gate.stop)
            self.pid, self.bootstrap = gate.pid, gate.bootstrap
        self.rows = []

    def round(self, opts, certs, workdir):
        cpu0 = cpu_seconds(self.pid)
        ps, pbytes = produce(opts.build_dir, self.bootstrap, certs, opts.messages, opts.size,
                             workdir)
        cpu1 = cpu_seconds(self.pid)
        cs, cbytes, _ = consume(self.bootstrap, certs, opts.messages)
        cpu2 = cpu_seconds(self.pid)
        self.rows.append({"produce_mbs": pbytes / ps / 1e6, "consume_mbs": cbytes / cs / 1e6,
                          "produce_cpu_per_gb": (cpu1 - cpu0) / (pbytes / 1e9),
                          "consume_cpu_per_gb": (cpu2 - cpu1) / (cbytes / 1e9)})

    def result(self, opts, certs):
        port = int(self.bootstrap.split(",")[0].rsplit(":", 1)[1])
        before, with_idle, opened = idle_rss(self.pid, port, certs, opts.idle)
        med = lambda key: sorted(r[key] for r in self.rows)[len(self.rows) // 2]  # noqa: E731
        return {k: med(k) for k in self.rows[0]} | {"rss_before_mib": before,
                                                     "rss_idle_mib": with_idle, "idle": opened}

    def stop(self):
        for fn in reversed(self.stops):
            try:
                fn()
            except Exception:  # noqa: BLE001 - stopping must go on
                pass


def main():
    # SIGTERM (a timeout) unwinds like Ctrl-C, so every finally stops its processes.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--messages", type=int, default=200000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--subjects", default="haproxy,epochgate")
    ap.add_argument("--out", help="markdown table file (default: stdout only)")
    opts = ap.parse_args()
    opts.build_dir = os.path.abspath(opts.build_dir)
    workdir = tempfile.mkdtemp(prefix="epochgate-tls-bench-")
    certs = tls_rig.make_certs(os.path.join(workdir, "certs"))
    load_start = open("/proc/loadavg").read().strip()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    names = opts.subjects.split(",")
    subjects, results = {}, {}
    try:
        for name in names:
            try:
                subjects[name] = Subject(name, opts, certs, workdir)
            except (RuntimeError, AssertionError, OSError, subprocess.TimeoutExpired) as e:
                results[name] = {"error": str(e)}
        # Rounds alternate the subjects (rotated order each round), so the
        # shared machine's noise falls on both alike.
        for i in range(opts.rounds):
            order = [n for n in names if n in subjects]
            order = order[i % len(order):] + order[:i % len(order)] if order else order
            for name in order:
                if name in results:
                    continue
                try:
                    subjects[name].round(opts, certs, workdir)
                except (RuntimeError, AssertionError, OSError, subprocess.TimeoutExpired) as e:
                    results[name] = {"error": str(e)}
        for name, subj in subjects.items():
            if name not in results:
                try:
                    results[name] = subj.result(opts, certs)
                except (RuntimeError, AssertionError, OSError) as e:
                    results[name] = {"error": str(e)}
    finally:
        for subj in subjects.values():
            subj.stop()
    results = {n: results[n] for n in names if n in results}
    load_end = open("/proc/loadavg").read().strip()
    lines = ["| TLS both sides (%d x %d B, %d rounds, median) | produce MB/s | consume MB/s | "
             "CPU s/GB produce | CPU s/GB consume | RSS idle -> %d TLS conns (MiB) |"
             % (opts.messages, opts.size, opts.rounds, opts.idle), "|---|---|---|---|---|---|"]
    for name, r in results.items():
        if "error" in r:
            lines.append("| %s | not run: %s | | | | |" % (name, r["error"].replace("|", "/")[:200]))
            continue
        lines.append("| %s | %.1f | %.1f | %.2f | %.2f | %.1f -> %.1f (%d open) |" % (
            name, r["produce_mbs"], r["consume_mbs"], r["produce_cpu_per_gb"],
            r["consume_cpu_per_gb"], r["rss_before_mib"], r["rss_idle_mib"], r["idle"]))
    if "error" not in results.get("haproxy", {"error": 1}) and \
            "error" not in results.get("epochgate", {"error": 1}):
        h, g = results["haproxy"], results["epochgate"]
        lines.append("")
        lines.append("epochgate / HAProxy: produce %.2f, consume %.2f (target >= 0.95); CPU per GB "
                     "produce %.2f, consume %.2f (target <= 1.1); RSS at %d idle TLS clients "
                     "%.1f MiB (target < 128)" % (
                         g["produce_mbs"] / h["produce_mbs"], g["consume_mbs"] / h["consume_mbs"],
                         g["produce_cpu_per_gb"] / h["produce_cpu_per_gb"],
                         g["consume_cpu_per_gb"] / h["consume_cpu_per_gb"], g["idle"],
                         g["rss_idle_mib"]))
    if "error" not in results.get("haproxy", {"error": 1}) and \
            "error" not in results.get("epochgate-whole", {"error": 1}):
        h, g = results["haproxy"], results["epochgate-whole"]
        lines.append("")
        lines.append("epochgate-whole (Fetch responses read whole, limits.stream_fetch_min_bytes 0)"
                     " / HAProxy: produce %.2f, consume %.2f; CPU per GB produce %.2f, consume %.2f"
                     % (g["produce_mbs"] / h["produce_mbs"], g["consume_mbs"] / h["consume_mbs"],
                        g["produce_cpu_per_gb"] / h["produce_cpu_per_gb"],
                        g["consume_cpu_per_gb"] / h["consume_cpu_per_gb"]))
    lines.append("")
    lines.append("Run %s; load average at start `%s`, at end `%s` (2 cores shared with "
                 "other work: compare the ratios, taken within this one run)."
                 % (started, load_start, load_end))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if opts.out:
        with open(opts.out, "w") as f:
            f.write(text)
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
