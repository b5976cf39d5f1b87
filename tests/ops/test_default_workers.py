"""The default worker count (`workers: 0`) is the number of CPUs the process
may use, as an operator sets it: a CPU affinity mask (taskset, a cpuset) and
a cgroup CPU quota (a pod's CPU limit), rounded up. An explicit `workers`
still wins. Read from epochgate's start-up log, as an operator would."""

import os
import re
import shutil
import subprocess
import time

from epochgate_testlib import harness  # noqa: E402


def start_log(h, prefix, args=(), timeout=15):
    """Starts epochgate behind `prefix` (a command that execs it), waits for
    its ready line, stops it with SIGTERM and returns its output."""
    log = os.path.join(h.workdir, "gate-%d.log" % time.monotonic_ns())
    argv = list(prefix) + [h.epochgate_path, "--bootstrap", "127.0.0.1:9",
                           "--listen", "127.0.0.1:0", "--no-admin", "--ready-file", "-"] + list(args)
    with open(log, "wb") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and p.poll() is None:
                with open(log, "rb") as f:
                    if b"epochgate ready" in f.read():
                        break
                time.sleep(0.05)
        finally:
            p.terminate()
            p.wait(timeout=timeout)
    assert p.returncode == 0, "exit %d after SIGTERM" % p.returncode
    with open(log, "rb") as f:
        text = f.read().decode(errors="replace")
    assert "epochgate ready" in text, text
    return text


def workers_in(text):
    m = re.search(r"\((\d+) workers\)", text)
    assert m, text
    return int(m.group(1))


def test_affinity_mask_sets_the_default(h):
    taskset = shutil.which("taskset")
    assert taskset, "taskset (util-linux) is part of the base system"
    text = start_log(h, [taskset, "-c", "0"])
    h.note([l for l in text.splitlines() if "workers:" in l][0])
    assert workers_in(text) == 1, text
    assert re.search(r"workers: 1 \(the CPUs in this process's affinity mask", text) or \
        re.search(r"workers: 1 \(the CPUs this process may use: 1 in its affinity mask", text), text


def test_explicit_workers_win_over_the_mask(h):
    text = start_log(h, [shutil.which("taskset"), "-c", "0"], ["--workers", "3"])
    assert workers_in(text) == 3, text
    assert "workers: 3 (" not in text, "an explicit setting is not explained as a default"


def cgroup_to_limit():
    """A fresh cgroup this process may create, with `cpu.max` (v2) or
    `cpu.cfs_quota_us` (v1) to write, or (None, why not)."""
    if os.geteuid() != 0:
        return None, "not root: no cgroup can be made"
    v1 = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            if fields[dash + 1] == "cgroup" and "cpu" in fields[dash + 3].split(","):
                v1 = fields[4]
    if v1 and os.access(v1, os.W_OK):
        return (os.path.join(v1, "epochgate-test-%d" % os.getpid()), "v1"), None
    root = "/sys/fs/cgroup"
    try:
        with open(os.path.join(root, "cgroup.subtree_control")) as f:
            has_cpu = "cpu" in f.read().split()
        with open("/proc/self/cgroup") as f:
            at_root = "0::/\n" in f.read()
    except OSError as e:
        return None, "no cgroup v1 cpu hierarchy and no cgroup v2 root here (%s)" % e
    if has_cpu and at_root:
        return (os.path.join(root, "epochgate-test-%d" % os.getpid()), "v2"), None
    return None, "no writable cgroup with the cpu controller here"


def test_cgroup_cpu_limit_sets_the_default(h):
    """A quota of half a CPU: one worker, whatever the mask allows, and the
    log names the file the limit came from."""
    made, why = cgroup_to_limit()
    if made is None:
        # The parsing is pinned by tests/proxy/app/usable_cpus_test.cc on
        # fake trees; only the kernel's own files need root here.
        h.note("cgroup part not run: %s" % why)
        return
    path, kind = made
    os.mkdir(path)
    try:
        if kind == "v1":
            with open(os.path.join(path, "cpu.cfs_quota_us"), "w") as f:
                f.write("50000")
            limit_file = os.path.join(path, "cpu.cfs_quota_us")
        else:
            with open(os.path.join(path, "cpu.max"), "w") as f:
                f.write("50000 100000")
            limit_file = os.path.join(path, "cpu.max")
        enter = ["/bin/sh", "-c", 'echo $$ > "$0"/cgroup.procs && exec "$@"', path]
        text = start_log(h, enter)
        h.note([l for l in text.splitlines() if "workers:" in l][0])
        assert workers_in(text) == 1, text
        assert ("a cgroup CPU limit of 0.50 in %s" % limit_file) in text, text
    finally:
        deadline = time.monotonic() + 5
        while True:
            try:
                os.rmdir(path)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


if __name__ == "__main__":
    harness.main(globals())
