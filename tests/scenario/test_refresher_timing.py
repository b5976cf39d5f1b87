"""The refresher wakes epochgate's main loop only when a refresh is due.

Its timer is armed for the next moment something is due (the periodic
refresh, the end of the urgent rate limit, a failed round's backoff), not
polled, and so is the listener registry's (a bind retry, a departed node's
grace): an idle epochgate's main thread sleeps but for its 1 s housekeeping,
the periodic refresh still comes every interval_ms, a config reload moves
the next one at once, and urgent refreshes stay rate-limited by
urgent_min_interval_ms.
"""

import signal
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib.scenario_lib import harness  # noqa: E402

REFRESHES = "epochgate_metadata_refreshes_total"
RELOADS = "epochgate_config_reloads_total"


def _config(interval_ms, urgent_min_ms=100, extra=""):
    return ("refresher:\n  interval_ms: %d\n  urgent_min_interval_ms: %d\n%s"
            % (interval_ms, urgent_min_ms, extra))


def _periodic(gate):
    return sl.scrape(gate).sum(REFRESHES, trigger="periodic")


def _urgent(gate):
    return sum(v for l, v in sl.scrape(gate).rows(REFRESHES) if l.get("trigger") != "periodic")


def _quiet(gate, seconds):
    """True when no urgent refresh was counted for `seconds`."""
    n = _urgent(gate)
    time.sleep(seconds)
    return _urgent(gate) == n


def _reload(h, gate, text):
    done = sl.scrape(gate).sum(RELOADS, result="success")
    sl.write_config(h, text)
    gate.proc.proc.send_signal(signal.SIGHUP)
    harness.wait_until(lambda: sl.scrape(gate).sum(RELOADS, result="success") > done, 10,
                       what="the reload applied")


def _main_thread_switches(pid):
    """Voluntary context switches of the main thread (the main loop's): one
    per sleep in epoll_wait that something ended."""
    with open("/proc/%d/task/%d/status" % (pid, pid)) as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches in /proc/%d/task/%d/status" % (pid, pid))


def test_an_idle_main_loop_sleeps_between_due_refreshes(h):
    cluster = h.start_cluster(3, ["t:1:3"])
    gate = sl.start_gate(h, cluster)  # interval_ms 30000: no refresh due in the window
    harness.wait_until(lambda: sl.scrape(gate).sum(REFRESHES) >= 1, 10,
                       what="the start-up refresh")
    time.sleep(0.5)
    pid = gate.proc.proc.pid
    seconds = 4.0
    before = _main_thread_switches(pid)
    time.sleep(seconds)  # nothing asks epochgate anything, not even /metrics
    per_second = (_main_thread_switches(pid) - before) / seconds
    h.note("idle main thread: %.1f wake-ups per second" % per_second)
    # Left: the 1 s housekeeping. A 50 ms refresher poll would add 20, a
    # 250 ms listener registry poll 4.
    assert per_second < 4, "idle main thread woke %.1f times per second" % per_second


def test_the_periodic_refresh_keeps_its_interval_and_a_reload_moves_it(h):
    cluster = h.start_cluster(3, ["t:1:3"])
    gate = sl.start_gate(h, cluster, config=_config(400))
    gc = sl.GateClient(h, gate)
    gc.metadata_v12(["t"])  # the view knows a topic: the periodic refresh names it
    harness.wait_until(lambda: _periodic(gate) >= 1, 5, what="a first periodic refresh")
    start = _periodic(gate)
    time.sleep(4.0)
    n = _periodic(gate) - start
    h.note("interval_ms 400: %d periodic refreshes in 4 s" % n)
    assert 7 <= n <= 12, "%d periodic refreshes in 4 s at interval_ms 400 (+-10%%)" % n

    # A longer interval: the refresh armed for the old one does not come.
    _reload(h, gate, _config(60000))
    time.sleep(0.2)  # one already in flight at the reload may still count
    start = _periodic(gate)
    time.sleep(2.0)
    assert _periodic(gate) == start, "a periodic refresh came after interval_ms went to 60 s"

    # A shorter one, already waited out: due at once, then every interval.
    _reload(h, gate, _config(300))
    harness.wait_until(lambda: _periodic(gate) > start, 1.0,
                       what="a periodic refresh right after interval_ms went to 300 ms")
    time.sleep(1.5)
    # 5 at 300 ms apart from each answer; a loaded machine (or ASan) adds
    # each Metadata round trip to the interval.
    assert _periodic(gate) - start >= 3, _periodic(gate) - start


def test_urgent_refreshes_stay_prompt_and_rate_limited(h):
    # refresh_before_fence_ms 0: each Produce sent to a broker that does not
    # lead the partition is fenced and first asks for an urgent refresh.
    policy = "policy:\n  refresh_before_fence_ms: 0\n"
    cluster = h.start_cluster(3, ["busy:1:3"])
    gate = sl.start_gate(h, cluster, config=_config(60000, 500, policy))
    gc = sl.GateClient(h, gate)
    gc.metadata_v12(["busy"])
    leader = cluster.partition("busy", 0)["leader"]
    wrong = sl.other_broker(leader)
    # Past the rate limit of the refreshes the client's Metadata caused.
    harness.wait_until(lambda: _quiet(gate, 0.7), 10, interval=0, what="urgent refreshes to stop")
    start = _urgent(gate)
    t0 = time.monotonic()
    sl.produce_values(gc, wrong, "busy", 0, [b"first"])
    # Bounded loosely: the claim is that one comes without waiting for the
    # periodic refresh (60 s here); the note says how soon.
    harness.wait_until(lambda: _urgent(gate) > start, 3.0, interval=0.01,
                       what="an urgent refresh after a fenced Produce")
    h.note("first urgent refresh %.0f ms after the fenced Produce" % (
        (time.monotonic() - t0) * 1000))
    # Fenced writes for 3 s, each sent 50 ms after the last one's answer
    # (the fence holds it for its refresh): unlimited, each would get its
    # refresh at once, tens a second; rate-limited, one per 500 ms.
    deadline = time.monotonic() + 3.0
    i = 0
    while time.monotonic() < deadline:
        sl.produce_values(gc, wrong, "busy", 0, [b"w%d" % i])
        i += 1
        time.sleep(0.05)
    time.sleep(0.6)  # the last one waited out its rate limit
    n = _urgent(gate) - start
    h.note("%d fenced writes in 3 s: %d urgent refreshes (urgent_min_interval_ms 500)" % (i, n))
    assert 4 <= n <= 10, "%d urgent refreshes for %d fenced writes in 3.6 s" % (n, i)


if __name__ == "__main__":
    harness.main(globals())
