"""The container image, run by podman the way docs/deploy.md shows: as uid
10001 on a read-only root filesystem with no capabilities, on the host's
network, with the config directory mounted read-only, in front of the
embedded cluster (epochgate-mockcluster). kcat produces and consumes through
it, /readyz answers, an edited config is reloaded on SIGHUP (podman kill),
and SIGTERM (podman stop) drains an in-flight request and exits 0 within
drain_timeout_ms. The image itself: small, numeric non-root user, exec-form
entrypoint (no shell), and the commands in docs/deploy.md are the ones run
here.

Runs as PYTHONPATH=tests/lib /usr/bin/python3 tests/image/test_image.py --build-dir BUILD, with
EPOCHGATE_IMAGE naming the image tools/image/build.sh built (ctest fixture
epochgate_image). Skipped (exit 77) only where podman cannot run, which
tools/image/podman.sh --check explains; under CI=true that check fails instead.
Owns: the image's run-time contract. Must never: leave a container behind,
pull or push an image, or bind anything but 127.0.0.1.
"""

import os
import re
import signal
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
from epochgate_testlib import harness  # noqa: E402
from epochgate_testlib import kafka_wire as kw  # noqa: E402
from epochgate_testlib import prom_text  # noqa: E402

PODMAN = os.path.join(REPO, "tools", "image", "podman.sh")
IMAGE = os.environ.get("EPOCHGATE_IMAGE", "")
IMAGE_UID = 10001
SIZE_LIMIT = 100 * 1024 * 1024
DRAIN_TIMEOUT_MS = 8000
TOPIC = "image-orders"
# The run options of docs/deploy.md's `podman run` line, the config mount aside.
RUN_OPTIONS = ["--network=host", "--user", "%d:%d" % (IMAGE_UID, IMAGE_UID), "--read-only",
               "--read-only-tmpfs=false", "--cap-drop=ALL", "--security-opt=no-new-privileges"]


def podman(h, args, check=True, timeout=60.0):
    return h.run([PODMAN] + list(args), timeout=timeout, check=check, name="podman")


def require_podman(h):
    if not IMAGE:
        raise AssertionError("EPOCHGATE_IMAGE is not set (ctest sets it to what tools/image/build.sh built)")
    r = subprocess.run([PODMAN, "--check"], capture_output=True, text=True, timeout=60, check=False)
    if r.returncode == harness.SKIP_RETURN_CODE:
        raise harness.Skip(r.stderr.strip())
    if r.returncode != 0:
        raise AssertionError("podman cannot run: " + r.stderr.strip())
    r = subprocess.run([PODMAN, "image", "exists", IMAGE], timeout=60, check=False)
    if r.returncode != 0:
        raise AssertionError("image %s is not in podman's store (tools/image/build.sh builds it)" % IMAGE)


def write_config(path, mode, level="info"):
    """The mounted config: what the reload test edits. Listeners come from
    flags (ephemeral loopback ports), as the integration harness does."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("logging:\n  level: %s\npolicy:\n  default_mode: %s\ndrain_timeout_ms: %d\n"
                % (level, mode, DRAIN_TIMEOUT_MS))
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


class ContainerGate:
    """epochgate in the image, started with `podman run` in the foreground
    (its stdout is the container's), reached on 127.0.0.1 (host network)."""

    def __init__(self, h, upstream_bootstrap, conf_dir):
        self.h = h
        self.name = "epochgate-test-%d-%d" % (os.getpid(), int(time.monotonic() * 1000) % 100000)
        argv = [PODMAN, "run", "--rm", "--name", self.name] + RUN_OPTIONS + [
            "-v", "%s:/etc/epochgate:ro" % conf_dir, IMAGE,
            "--config", "/etc/epochgate/epochgate.yaml",
            "--bootstrap", upstream_bootstrap, "--advertise-host", harness.LOOPBACK,
            "--listen", harness.LOOPBACK + ":0", "--broker-port-base", "0",
            "--admin", harness.LOOPBACK + ":0", "--ready-file", "-"]
        self.proc = harness.Process("container", argv, h.workdir)
        h.on_close(self.remove)
        deadline = time.monotonic() + 60
        while True:
            line = self.proc.read_line(timeout=max(0.1, deadline - time.monotonic()))
            if line.startswith("epochgate ready "):
                break
        fields = harness.ready_fields(line)
        self.bootstrap = fields["bootstrap"]
        self.admin = fields["admin"]
        self.bootstrap_address = harness.parse_hostport(self.bootstrap)

    http_get = harness.Epochgate.http_get

    def metrics(self):
        status, body = self.http_get("/metrics")
        assert status == 200, "/metrics answered %d" % status
        return body

    def log(self):
        with open(self.proc.log_path, errors="replace") as f:
            return f.read()

    def remove(self):
        """Never leave the container behind, whatever the test did."""
        subprocess.run([PODMAN, "rm", "--force", "--time", "0", self.name], capture_output=True,
                       timeout=60, check=False)
        self.proc.stop(signal.SIGKILL, timeout=10)


def start(h, cluster, mode="enforce"):
    conf = os.path.join(h.workdir, "conf")
    os.makedirs(conf, exist_ok=True)
    os.chmod(conf, 0o755)
    os.chmod(h.workdir, 0o755)
    write_config(os.path.join(conf, "epochgate.yaml"), mode)
    return ContainerGate(h, cluster.bootstrap, conf), conf


def test_image_is_small_non_root_and_shell_free(h):
    require_podman(h)
    fmt = "{{.Size}}|{{.Config.User}}|{{json .Config.Entrypoint}}|{{json .Config.Cmd}}"
    size, user, entrypoint, cmd = podman(h, ["image", "inspect", "--format", fmt, IMAGE]).stdout.strip().split("|")
    assert user == "%d:%d" % (IMAGE_UID, IMAGE_UID), "image USER is %r" % user
    assert entrypoint == '["/usr/local/bin/epochgate"]', "entrypoint %s is not the exec form of the binary" % entrypoint
    assert cmd == '["--config","/etc/epochgate/epochgate.yaml"]', "CMD is %s" % cmd
    assert int(size) < SIZE_LIMIT, "image is %.1f MiB, limit %d MiB" % (int(size) / 2**20, SIZE_LIMIT // 2**20)
    # --version runs with the image's own user and libraries, no shell involved.
    r = podman(h, ["run", "--rm"] + RUN_OPTIONS + [IMAGE, "--version"])
    assert re.search(r"\d+\.\d+\.\d+", r.stdout), r.stdout
    h.note("image %s: %.1f MiB, USER %s, %s" % (IMAGE, int(size) / 2**20, user, r.stdout.strip()))


def test_docs_show_the_commands_run_here(h):
    with open(os.path.join(REPO, "docs", "deploy.md"), encoding="utf-8") as f:
        doc = re.sub(r"[ \t]*\\\n\s*", " ", f.read())  # continuation lines joined
    build = subprocess.run([os.path.join(REPO, "tools", "image", "build.sh"), "--print-command"],
                           capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    assert "\n%s\n" % build in doc, "docs/deploy.md does not show `%s`" % build
    runs = [line for line in doc.splitlines() if line.startswith("podman run ")]
    assert runs, "docs/deploy.md shows no podman run line"
    want = " ".join(["podman", "run", "--rm"] + RUN_OPTIONS)
    assert any(line.startswith(want) for line in runs), \
        "docs/deploy.md's podman run is not `%s ...`: %s" % (want, runs)


def test_kcat_produce_consume_and_readyz(h):
    require_podman(h)
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    gate, _ = start(h, cluster)
    harness.wait_until(lambda: gate.http_get("/readyz")[0] == 200, 20, what="/readyz 200")
    payloads = ["record-%d-%s" % (i, "x" * (i % 97)) for i in range(200)]
    h.kcat(["-b", gate.bootstrap, "-P", "-t", TOPIC, "-p", "1", "-X", "acks=all"],
           input=("\n".join(payloads) + "\n").encode(), timeout=60)
    out = h.kcat(["-b", gate.bootstrap, "-C", "-t", TOPIC, "-p", "1", "-o", "beginning", "-e", "-q"],
                 timeout=60).stdout
    assert out.splitlines() == payloads, "consumed %d records, produced %d" % (len(out.splitlines()), len(payloads))
    # The client saw only the container's listeners, never the cluster's.
    md = h.kcat(["-b", gate.bootstrap, "-L"]).stdout
    for port in cluster.ports:
        assert ":%d " % port not in md and not md.rstrip().endswith(":%d" % port), \
            "cluster port %d leaked through the container:\n%s" % (port, md)
    produced = prom_text.metric(gate.metrics(), "epochgate_requests_total", api="produce")
    assert produced >= 1, "container's /metrics counted no produce request"
    h.note("%d records through the container, /readyz 200" % len(payloads))


def test_sighup_reloads_the_mounted_config(h):
    require_podman(h)
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    gate, conf = start(h, cluster, mode="enforce")
    status, body = gate.http_get("/debug/config")
    assert status == 200 and '"enforce"' in body, body[:400]
    write_config(os.path.join(conf, "epochgate.yaml"), "observe")
    podman(h, ["kill", "--signal", "HUP", gate.name])
    harness.wait_until(lambda: '"observe"' in gate.http_get("/debug/config")[1], 15,
                       what="the edited mounted config in effect")
    harness.wait_until(lambda: re.search(r"config reloaded.*SIGHUP|SIGHUP.*config reloaded", gate.log()),
                       15, what="a reload triggered by SIGHUP in the container's log")
    ok = prom_text.metric(gate.metrics(), "epochgate_config_reloads_total", result="success")
    assert ok >= 1, "epochgate_config_reloads_total{result=success} is %s" % ok
    assert gate.proc.alive(), "the container exited on SIGHUP"
    h.note("SIGHUP via podman kill reloaded the read-only mount (%d successful reloads)" % ok)


def test_sigterm_drains_within_timeout_and_exits_zero(h):
    require_podman(h)
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    gate, _ = start(h, cluster)
    harness.wait_until(lambda: gate.http_get("/readyz")[0] == 200, 20, what="/readyz 200")
    host, port = gate.bootstrap_address
    conn = kw.Connection(host, port, timeout=10)
    h.on_close(conn.close)
    conn.send(kw.api_versions_request(1, 0))
    conn.recv_frame()
    # Slow every broker so the next request is still in flight at SIGTERM.
    for b in (1, 2, 3):
        cluster.cmd("rtt %d 1500" % b)
    conn.send(kw.metadata_request(77, [TOPIC], version=1))
    time.sleep(0.2)
    t0 = time.monotonic()
    # podman stop sends the image's STOPSIGNAL (SIGTERM) and kills only after --time.
    stopper = subprocess.Popen([PODMAN, "stop", "--time", str(DRAIN_TIMEOUT_MS // 1000 + 20), gate.name],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        harness.wait_until(lambda: gate.http_get("/readyz", timeout=2)[0] == 503, 10, what="readiness false")
        refused = False
        try:
            s = socket.create_connection((host, port), timeout=2)
            s.settimeout(2)
            s.sendall(kw.api_versions_request(5, 0))
            refused = s.recv(1) == b""
            s.close()
        except OSError:
            refused = True
        assert refused, "a new connection was served while draining"
        frame = conn.recv_frame(timeout=10)
        assert kw.frame_correlation_id(frame, is_request=False) == 77, "in-flight request lost"
        assert TOPIC in kw.parse_metadata_response(frame, 1)["topics"]
        rc = gate.proc.proc.wait(timeout=DRAIN_TIMEOUT_MS / 1000 + 30)
    finally:
        stopper.wait(timeout=60)
    elapsed = time.monotonic() - t0
    assert rc == 0, "container exit code %d after SIGTERM (137: killed, the drain overran)" % rc
    assert elapsed < DRAIN_TIMEOUT_MS / 1000 + 5, "drain took %.1f s, drain_timeout_ms is %d" % (
        elapsed, DRAIN_TIMEOUT_MS)
    h.note("podman stop: drained, in-flight answer delivered, exit 0 in %.2f s" % elapsed)


if __name__ == "__main__":
    harness.main(globals())
