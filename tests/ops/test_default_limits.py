"""The defaults fit what the process may use, as an operator sets it. The
worker count (`workers: 0`): the CPU affinity mask (taskset, a cpuset) and a
cgroup CPU quota (a pod's CPU limit), rounded up. The buffer budget
(`limits.buffer_budget_bytes: 0`): 1 GiB, or half a cgroup memory limit
(a pod's memory limit) when less, read again at a reload. An explicit
setting still wins. Read from epochgate's log and its /metrics
(`epochgate_workers`, `epochgate_buffer_budget_bytes`), as an operator
would; the cgroup cases make a real cgroup (root only)."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request

from epochgate_testlib import harness  # noqa: E402
from epochgate_testlib.prom_text import metric  # noqa: E402


def read(path):
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")


def wait_for(path, needle, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in read(path):
            return True
        time.sleep(0.05)
    return False


def start_log(h, prefix, args=(), while_running=None, timeout=15):
    """Starts epochgate behind `prefix` (a command that execs it), waits for
    its ready line, calls `while_running(process, log path)` if given, stops
    it with SIGTERM (it must exit 0) and returns its output."""
    log = os.path.join(h.workdir, "gate-%d.log" % time.monotonic_ns())
    argv = list(prefix) + [h.epochgate_path, "--bootstrap", "127.0.0.1:9",
                           "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--ready-file", "-"] + list(args)
    with open(log, "wb") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            assert wait_for(log, "epochgate ready", timeout), read(log)
            if while_running:
                while_running(p, log)
        finally:
            p.terminate()
            p.wait(timeout=timeout)
    assert p.returncode == 0, "exit %d after SIGTERM" % p.returncode
    return read(log)


def admin_get(log, path):
    """GET `path` from the admin port of the epochgate whose output is `log`
    (its address from the ready line)."""
    ready = [l for l in read(log).splitlines() if l.startswith("epochgate ready ")]
    assert ready, read(log)
    fields = harness.ready_fields(ready[0])
    with urllib.request.urlopen("http://%s%s" % (fields["admin"], path), timeout=5) as r:
        return r.read().decode()


def gauge(log, name):
    """`name`'s value on /metrics; checked against /debug/config's `in_force`,
    which says the same values."""
    value = metric(admin_get(log, "/metrics"), name)
    in_force = json.loads(admin_get(log, "/debug/config"))["in_force"]
    key = {"epochgate_workers": "workers",
           "epochgate_buffer_budget_bytes": "buffer_budget_bytes"}[name]
    assert in_force[key] == value, (in_force, name, value)
    return value


def workers_in(text):
    m = re.search(r"\((\d+) workers\)", text)
    assert m, text
    return int(m.group(1))


def test_affinity_mask_sets_the_default(h):
    taskset = shutil.which("taskset")
    assert taskset, "taskset (util-linux) is part of the base system"
    seen = {}
    text = start_log(h, [taskset, "-c", "0"],
                     while_running=lambda p, log: seen.update(
                         workers=gauge(log, "epochgate_workers")))
    assert seen["workers"] == 1, seen
    h.note([l for l in text.splitlines() if "workers:" in l][0])
    assert workers_in(text) == 1, text
    assert re.search(r"workers: 1 \(the CPUs in this process's affinity mask", text) or \
        re.search(r"workers: 1 \(the CPUs this process may use: 1 in its affinity mask", text), text


def test_explicit_workers_win_over_the_mask(h):
    seen = {}
    text = start_log(h, [shutil.which("taskset"), "-c", "0"], ["--workers", "3"],
                     while_running=lambda p, log: seen.update(
                         workers=gauge(log, "epochgate_workers")))
    assert workers_in(text) == 3, text
    assert seen["workers"] == 3, seen
    assert "workers: 3 (" not in text, "an explicit setting is not explained as a default"


def make_cgroup(h, controller):
    """A fresh cgroup with `controller` ("cpu" or "memory") for this test to
    write limits into, removed at the test's end; (None, "v1" or "v2") or
    (None, why not)."""
    if os.geteuid() != 0:
        return None, "not root: no cgroup can be made"
    v1 = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            if fields[dash + 1] == "cgroup" and controller in fields[dash + 3].split(","):
                v1 = fields[4]
    kind = None
    if v1 and os.access(v1, os.W_OK):
        path, kind = os.path.join(v1, "epochgate-test-%d-%s" % (os.getpid(), controller)), "v1"
    else:
        root = "/sys/fs/cgroup"
        try:
            with open(os.path.join(root, "cgroup.subtree_control")) as f:
                enabled = controller in f.read().split()
            with open("/proc/self/cgroup") as f:
                at_root = "0::/\n" in f.read()
        except OSError as e:
            return None, "no cgroup v1 %s hierarchy and no cgroup v2 root here (%s)" % (controller, e)
        if not (enabled and at_root):
            return None, "no writable cgroup with the %s controller here" % controller
        path, kind = os.path.join(root, "epochgate-test-%d-%s" % (os.getpid(), controller)), "v2"
    os.mkdir(path)

    def remove():
        deadline = time.monotonic() + 5
        while True:
            try:
                os.rmdir(path)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    h.on_close(remove)
    return path, kind


def enter(path):
    """A prefix that moves the command into cgroup `path`, then execs it."""
    return ["/bin/sh", "-c", 'echo $$ > "$0"/cgroup.procs && exec "$@"', path]


def test_cgroup_cpu_limit_sets_the_default(h):
    """A quota of half a CPU: one worker, whatever the mask allows, and the
    log names the file the limit came from."""
    path, kind = make_cgroup(h, "cpu")
    if path is None:
        # The parsing is pinned by tests/proxy/app/process_limits_test.cc on
        # fake trees; only the kernel's own files need root here.
        h.note("cgroup part not run: %s" % kind)
        return
    name, value = ("cpu.cfs_quota_us", "50000") if kind == "v1" else ("cpu.max", "50000 100000")
    with open(os.path.join(path, name), "w") as f:
        f.write(value)
    text = start_log(h, enter(path))
    h.note([l for l in text.splitlines() if "workers:" in l][0])
    assert workers_in(text) == 1, text
    assert ("a cgroup CPU limit of 0.5 in %s" % os.path.join(path, name)) in text, text


MiB = 1 << 20


def budget_lines(text):
    return [l for l in text.splitlines() if "limits.buffer_budget_bytes:" in l]


def test_buffer_budget_without_a_memory_limit_is_one_gib(h):
    text = start_log(h, [])
    lines = budget_lines(text)
    h.note(lines[0] if lines else text)
    # This machine's own cgroup may carry a memory limit; then the line names it.
    assert re.search(r"limits\.buffer_budget_bytes: %d bytes \(1024 MiB; no cgroup memory limit\)"
                     % (1024 * MiB), text) or "half the cgroup memory limit" in text, text


def test_buffer_budget_follows_the_memory_limit_and_a_reload(h):
    """512 MiB limit: a 256 MiB budget. The limit lowered to 128 MiB while
    running (a pod resized in place) and SIGHUP: 64 MiB. Below twice the
    high watermark the budget stays at the watermark, said so, with a
    warning once it is not below the limit. A budget set in the config wins
    over all of them. Limits stay far above what the process itself uses
    (under ASan too): the kernel refuses a limit below a cgroup's usage."""
    path, kind = make_cgroup(h, "memory")
    if path is None:
        h.note("cgroup part not run: %s" % kind)
        return
    name = "memory.limit_in_bytes" if kind == "v1" else "memory.max"
    limit_file = os.path.join(path, name)

    def set_limit(mib):
        with open(limit_file, "w") as f:
            f.write(str(mib * MiB))

    set_limit(512)
    cfg = os.path.join(h.workdir, "limits.yaml")
    with open(cfg, "w") as f:
        f.write("limits:\n  buffer_budget_bytes: 0\n")

    def lower_and_reload(p, log):
        assert gauge(log, "epochgate_buffer_budget_bytes") == 256 * MiB
        set_limit(128)
        p.send_signal(signal.SIGHUP)
        assert wait_for(log, "%d bytes (64 MiB" % (64 * MiB)), read(log)
        assert gauge(log, "epochgate_buffer_budget_bytes") == 64 * MiB

    text = start_log(h, enter(path), ["--config", cfg], while_running=lower_and_reload)
    lines = budget_lines(text)
    for line in lines:
        h.note(line)
    assert len(lines) == 2, text
    assert ("limits.buffer_budget_bytes: %d bytes (256 MiB: half the cgroup memory limit of "
            "512 MiB in %s)" % (256 * MiB, limit_file)) in lines[0], text
    assert ("%d bytes (64 MiB: half the cgroup memory limit of 128 MiB in %s)"
            % (64 * MiB, limit_file)) in lines[1], text

    # A 384 MiB high watermark: half of 512 MiB is less, so the budget is
    # the watermark (said so); at 256 MiB it is not below the limit (a warning).
    with open(cfg, "w") as f:
        f.write("limits:\n  buffer_budget_bytes: 0\n  high_watermark_bytes: 384MiB\n")

    def down_to_the_watermark(p, log):
        needle = "limits.high_watermark_bytes: half"
        assert wait_for(log, needle), read(log)
        assert "is not below the cgroup memory limit" not in read(log), read(log)
        set_limit(256)
        p.send_signal(signal.SIGHUP)
        assert wait_for(log, "is not below the cgroup memory limit"), read(log)

    set_limit(512)
    text = start_log(h, enter(path), ["--config", cfg], while_running=down_to_the_watermark)
    clamped = [l for l in budget_lines(text) if "high_watermark" in l]
    for line in clamped:
        h.note(line)
    assert len(clamped) == 2 and all("%d bytes" % (384 * MiB) in l for l in clamped), text

    with open(cfg, "w") as f:
        f.write("limits:\n  buffer_budget_bytes: 200MiB\n")
    seen = {}
    text = start_log(h, enter(path), ["--config", cfg],
                     while_running=lambda p, log: seen.update(
                         budget=gauge(log, "epochgate_buffer_budget_bytes")))
    assert not budget_lines(text), "a budget set in the config is used as set:\n" + text
    assert seen["budget"] == 200 * MiB, seen


if __name__ == "__main__":
    harness.main(globals())
