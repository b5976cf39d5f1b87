"""tools/tls/tls_rig.py: real TLS software around the plaintext mock cluster,
for the TLS tests, the demo and the bench.

Owns: making the certificate set (tools/tls/make-certs.sh, the openssl
command line), writing an HAProxy configuration and running Debian's HAProxy
with it: one TLS frontend per mock broker (optionally requiring client
certificates), each relaying to its broker in plaintext or, for the bench's
comparison, in TLS. Listening sockets are bound here on 127.0.0.1 port 0 and
handed to HAProxy as inherited descriptors (`bind fd@N`), so no port is
guessed and no other address is ever bound. Must never leave HAProxy
running: stop() kills its process group, and each wait has a deadline.

As a command (the demo, manual checks):
    python3 tools/tls/tls_rig.py --certs DIR --upstream HOST:PORT [...] [--mtls]
prints "TLS host:port,..." (one port per upstream, same order) and runs
until stdin closes or SIGTERM.
"""

import argparse
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_CERTS = os.path.join(HERE, "make-certs.sh")
LOOPBACK = "127.0.0.1"
DEFAULT_DOMAIN = "kafka.example.com"


class Certs:
    """Paths of one certificate set made by make-certs.sh `set` (see its
    header for what each name is). `path(name, kind)` with kind one of crt
    (leaf + CA chain), leaf.crt, key, pem (chain + key, HAProxy's form)."""

    def __init__(self, directory):
        self.dir = directory
        self.ca = self.path("ca", "crt")
        self.ca_dir = os.path.join(directory, "ca.d")
        self.other_ca = self.path("other-ca", "crt")
        with open(os.path.join(directory, "domain.txt")) as f:
            self.domain = f.read().strip()

    def path(self, name, kind):
        return os.path.join(self.dir, "%s.%s" % (name, kind))

    def leaf(self, name, *args):
        """Signs one more leaf (make-certs.sh leaf DIR NAME ARGS...)."""
        subprocess.run(["bash", MAKE_CERTS, "leaf", self.dir, name] + list(args), check=True,
                       stdout=subprocess.DEVNULL, timeout=60)
        return self.path(name, "crt")


def make_certs(directory, rsa=False, domain=DEFAULT_DOMAIN):
    """Makes the standard set in `directory` (created) and returns Certs.
    Raises RuntimeError with openssl's log when the script fails."""
    if shutil.which("openssl") is None:
        raise RuntimeError("openssl not installed (apt-get install openssl)")
    argv = ["bash", MAKE_CERTS, "set", directory, "--domain", domain] + (["--rsa"] if rsa else [])
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        log = os.path.join(directory, "openssl.log")
        tail = open(log, errors="replace").read()[-2000:] if os.path.exists(log) else ""
        raise RuntimeError("make-certs.sh failed: %s %s" % (r.stderr.decode(errors="replace"), tail))
    return Certs(directory)


class Frontend:
    """One TLS listener of the rig.
    cert: certificate set name HAProxy presents (server, expired, wronghost...).
    client_ca: CA file whose client certificates are required (mTLS), or None.
    upstream: (host, port) it relays to.
    upstream_tls: None (plaintext upstream) or dict(ca=..., sni=..., crt=...)
      to originate TLS to the upstream the way a TLS-terminating and
      re-encrypting proxy does (the bench's comparison)."""

    def __init__(self, upstream, cert="server", client_ca=None, upstream_tls=None, name=None):
        self.upstream = upstream
        self.cert = cert
        self.client_ca = client_ca
        self.upstream_tls = upstream_tls
        self.name = name
        self.sock = None
        self.port = None


def _maxconn():
    import resource
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(256, min(8000, (soft - 200) // 2))


class HAProxy:
    """Debian's HAProxy with one `frontend` per Frontend, TCP mode, TLS 1.2
    minimum. Start with start(); `.ports` lists the listening ports in order."""

    def __init__(self, workdir, certs, frontends, name="haproxy", nbthread=1):
        self.workdir = workdir
        self.certs = certs
        self.frontends = list(frontends)
        self.name = name
        self.nbthread = nbthread
        self.proc = None
        self.cfg_path = os.path.join(workdir, name + ".cfg")
        self.log_path = os.path.join(workdir, name + ".log")
        self._log = None

    @property
    def ports(self):
        return [f.port for f in self.frontends]

    @property
    def addresses(self):
        return [(LOOPBACK, f.port) for f in self.frontends]

    def _config(self, fds):
        lines = [
            "global",
            "  log stderr format raw local0 info",
            # Each connection costs two descriptors; leave HAProxy room below
            # the soft limit it inherits (it refuses to start above it).
            "  maxconn %d" % _maxconn(),
            "  nbthread %d" % self.nbthread,
            "  ssl-default-bind-options ssl-min-ver TLSv1.2",
            "  ssl-default-server-options ssl-min-ver TLSv1.2",
            "defaults",
            "  mode tcp",
            "  log global",
            "  option tcplog",
            "  timeout connect 5s",
            "  timeout client 1h",
            "  timeout server 1h",
            "  timeout client-fin 5s",
        ]
        for i, (f, fd) in enumerate(zip(self.frontends, fds)):
            name = f.name or "b%d" % i
            bind = "  bind fd@%d ssl crt %s" % (fd, self.certs.path(f.cert, "pem"))
            if f.client_ca:
                bind += " ca-file %s verify required" % f.client_ca
            server = "  server s0 %s:%d" % f.upstream
            if f.upstream_tls:
                t = f.upstream_tls
                server += " ssl verify required ca-file %s" % t["ca"]
                if t.get("sni"):
                    server += " sni str(%s) verifyhost %s" % (t["sni"], t["sni"])
                if t.get("crt"):
                    server += " crt %s" % t["crt"]
            lines += ["frontend %s" % name, bind, "  default_backend %s_up" % name,
                      "backend %s_up" % name, server]
        return "\n".join(lines) + "\n"

    def start(self, timeout=15.0):
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        if not os.access(haproxy, os.X_OK):
            raise RuntimeError("haproxy not installed (apt-get install haproxy)")
        fds = []
        for f in self.frontends:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            s.listen(1024)
            f.sock, f.port = s, s.getsockname()[1]
            fds.append(s.fileno())
        with open(self.cfg_path, "w") as out:
            out.write(self._config(fds))
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([haproxy, "-db", "-f", self.cfg_path], pass_fds=fds,
                                     stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=self._log, cwd=self.workdir, start_new_session=True)
        # HAProxy owns the sockets now; ours only kept them bound until exec.
        for f in self.frontends:
            f.sock.close()
            f.sock = None
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout):
        """Until every frontend completes a TLS handshake (HAProxy parsed its
        configuration and took the descriptors)."""
        deadline = time.monotonic() + timeout
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        pending = list(self.frontends)
        while pending:
            if self.proc.poll() is not None:
                raise RuntimeError("haproxy exited %s: %s" % (self.proc.returncode, self.tail()))
            if time.monotonic() > deadline:
                raise RuntimeError("haproxy not ready after %.0fs: %s" % (timeout, self.tail()))
            f = pending[0]
            try:
                with socket.create_connection((LOOPBACK, f.port), timeout=1) as raw:
                    with ctx.wrap_socket(raw) as tls:
                        tls.cipher()
                pending.pop(0)
            except ssl.SSLError:
                pending.pop(0)  # it answered TLS (a required client cert refused us: ready too)
            except OSError:
                time.sleep(0.05)

    def tail(self, lines=20):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=10.0):
        """Stops HAProxy (SIGUSR1: soft stop, then its process group is
        killed after `timeout`). Returns its exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=timeout)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=5)
        if self._log:
            self._log.close()
            self._log = None
        return self.proc.returncode


def broker_fronts(workdir, certs, upstreams, client_ca=None, cert="server", name="haproxy"):
    """A started HAProxy with one TLS frontend per (host, port) upstream,
    relaying in plaintext: the TLS listeners of a TLS Kafka cluster."""
    return HAProxy(workdir, certs, [Frontend(u, cert=cert, client_ca=client_ca)
                                    for u in upstreams], name=name).start()


def _main(argv):
    parser = argparse.ArgumentParser(description="TLS fronts for plaintext Kafka brokers")
    parser.add_argument("--certs", required=True, help="certificate set directory (made if absent)")
    parser.add_argument("--upstream", action="append", required=True, help="HOST:PORT")
    parser.add_argument("--mtls", action="store_true", help="require client certificates")
    parser.add_argument("--workdir", default=None)
    opts = parser.parse_args(argv)
    if os.path.exists(os.path.join(opts.certs, "domain.txt")):
        certs = Certs(os.path.abspath(opts.certs))
    else:
        certs = make_certs(os.path.abspath(opts.certs))
    upstreams = []
    for u in opts.upstream:
        host, _, port = u.rpartition(":")
        upstreams.append((host, int(port)))
    workdir = opts.workdir or certs.dir
    rig = broker_fronts(workdir, certs, upstreams, client_ca=certs.ca if opts.mtls else None)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("TLS " + ",".join("%s:%d" % a for a in rig.addresses), flush=True)
    try:
        while not stop and rig.alive():
            import select
            ready, _, _ = select.select([sys.stdin], [], [], 0.5)
            if ready and not sys.stdin.readline():
                break
    except KeyboardInterrupt:
        pass
    finally:
        rig.stop()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
