#!/usr/bin/env python3
"""bench/kafka_load/epochless_confirm.py: how soon epochgate confirms a
leader move that an old client's epoch-less Metadata (below v7) reported.

Such a report makes the view entry suspect: it fences nothing until
epochgate's own refresh (at its Metadata version, with epochs) confirms the
move. The refresh skips refresher.urgent_min_interval_ms within
ConfirmLimiter's bound (proxy/core/confirm_limiter.h); this measures it
where the interval would otherwise make it wait.

Per round, on the mock cluster (tools/epochgate-mockcluster) behind one
epochgate with `refresher.urgent_min_interval_ms` = --interval-ms: topic A's
leader moves and a raw Metadata v1 for A reports it (its refresh goes, and
the round waits until A is confirmed); right after, topic B's leader moves
and a Metadata v1 for B reports that. B's report comes a few ms after a
refresh, so the ordinary urgent refresh would wait out the rest of the
interval. *report -> confirmed* = from sending B's Metadata v1 (the report
passes epochgate on its answer, after this stamp: the request's round trip
counts against the figure) to epochgate's last successful refresh
(epochgate_metadata_last_success_timestamp_seconds, stamped in epochgate
after the view learnt the answer), read once /debug/metadata shows B at
the new leader and epoch, no longer suspect. Both stamps are the same
machine's wall clock. Also counted: the refreshes per round by trigger.

    /usr/bin/python3 bench/kafka_load/epochless_confirm.py --build build \\
        [--rounds 30] [--interval-ms 1000] [--results bench/RESULTS.md]

Bench tooling (loopback, every wait bounded), never part of the test suite.
"""

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "lib"))
import leader_move_clients as lm  # noqa: E402
from epochgate_testlib import kafka_wire as kw  # noqa: E402

BEGIN = "<!-- epochless-confirm:begin (bench/kafka_load/epochless_confirm.py) -->"
END = "<!-- epochless-confirm:end -->\n"


def view_entry(admin, topic):
    with urllib.request.urlopen(f"http://{admin}/debug/metadata", timeout=5) as r:
        view = json.loads(r.read())
    for t in view["topics"]:
        if t["name"] == topic:
            for p in t["partitions"]:
                if p["partition"] == 0:
                    return p
    return None


def wait_confirmed(admin, topic, leader, epoch, timeout=5.0):
    """Waits (bounded) until the view trusts `topic`[0] at `leader`/`epoch`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = view_entry(admin, topic)
        if p and p["leader"] == leader and p["epoch"] >= epoch and not p["suspect"]:
            return
        time.sleep(0.0005)
    raise RuntimeError(f"{topic}[0] not confirmed at {leader}/{epoch} in {timeout} s: {p}")


class Reporter:
    """An old client: raw Metadata v1 through epochgate's bootstrap listener."""

    def __init__(self, bootstrap):
        host, port = bootstrap.rsplit(":", 1)
        self.conn = kw.Connection(host, int(port))
        self.corr = 0

    def report(self, topic):
        """Sends Metadata v1 for `topic`; returns (wall clock s at sending,
        the leader the answer names)."""
        self.corr += 1
        sent = time.time()
        self.conn.send(kw.metadata_request(self.corr, [topic], version=1))
        md = kw.parse_metadata_response(self.conn.recv_frame(), 1)
        return sent, md["topics"][topic]["partitions"][0]["leader"]


def cluster_epoch(mock_bootstrap, topic):
    """The partition's leader epoch as the cluster says (Metadata v7, direct)."""
    host, port = mock_bootstrap.split(",")[0].rsplit(":", 1)
    c = kw.Connection(host, int(port))
    try:
        c.send(kw.metadata_request(1, [topic], version=7))
        p = kw.parse_metadata_response(c.recv_frame(), 7)["topics"][topic]["partitions"][0]
        return p["leader"], p["leader_epoch"]
    finally:
        c.close()


def run(args):
    mock, direct = lm.start_mock(args.build, "a:1:3")
    eg = None
    rounds = []
    try:
        mock.command("create b 1 3")
        for t in ("a", "b"):
            mock.command(f"leader {t} 0 1")
        with tempfile.TemporaryDirectory(prefix="eg-confirm-") as tmp:
            eg, bootstrap, admin = lm.start_epochgate(
                args.build, tmp, direct, "epochgate",
                config_text=('policy:\n  default_mode: "enforce"\n'
                             f'refresher:\n  urgent_min_interval_ms: {args.interval_ms}\n'))
            client = Reporter(bootstrap)
            leader = 1
            for _ in range(args.rounds):
                start = time.monotonic()
                leader = leader % 3 + 1
                before = lm.scrape(admin)
                for t in ("a", "b"):
                    mock.command(f"leader {t} 0 {leader}")
                    _, epoch = cluster_epoch(direct, t)
                    sent, seen = client.report(t)
                    assert seen == leader, (t, seen, leader)
                    wait_confirmed(admin, t, leader, epoch)
                after = lm.scrape(admin)
                confirmed = lm.metric_sum(after, "epochgate_metadata_last_success_timestamp_seconds")
                triggers = {}
                for (n, labels), v in after.items():
                    if n == "epochgate_metadata_refreshes_total":
                        d = v - before.get((n, labels), 0)
                        if d:
                            triggers[dict(labels)["trigger"]] = int(d)
                rounds.append({"confirm_ms": (confirmed - sent) * 1e3, "triggers": triggers})
                print(json.dumps(rounds[-1]), flush=True)
                # Spaced past the interval: each round's A report finds the
                # per-topic and burst bounds clear again.
                while time.monotonic() - start < args.interval_ms / 1e3 * 1.1:
                    time.sleep(0.01)
    finally:
        if eg:
            eg.close()
        mock.close()
    return rounds


def table(rounds, command, interval_ms):
    ms = sorted(r["confirm_ms"] for r in rounds)
    triggers = {}
    for r in rounds:
        for k, v in r["triggers"].items():
            triggers[k] = triggers.get(k, 0) + v
    return "\n".join([
        BEGIN,
        "## Old clients: an epoch-less move report confirmed",
        "",
        f"Produced by `{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} "
        f"cores shared with other work. Per round a leader moves and a raw Metadata v1 "
        f"reports it a few ms after epochgate's previous refresh (another topic's report), "
        f"with refresher.urgent_min_interval_ms {interval_ms}: the ordinary urgent refresh "
        f"would wait about {interval_ms} ms. *report -> confirmed* = from sending the "
        f"Metadata v1 to epochgate's refresh answer that made the view entry fence again "
        f"(epochgate_metadata_last_success_timestamp_seconds); the request's own round trip "
        f"counts against it.",
        "",
        "| rounds | report -> confirmed ms: median / p90 / max | refreshes by trigger (all rounds) |",
        "|---|---|---|",
        f"| {len(ms)} | {statistics.median(ms):.2f} / {lm.percentile(ms, 90):.2f} / "
        f"{max(ms):.2f} | {', '.join(f'{k} {v}' for k, v in sorted(triggers.items()))} |",
        END])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--interval-ms", type=int, default=1000,
                    help="refresher.urgent_min_interval_ms (the wait a confirmation skips)")
    ap.add_argument("--results", help="markdown file whose epochless-confirm block is replaced "
                    "(or appended)")
    args = ap.parse_args()
    command = shlex.join(["bench/kafka_load/epochless_confirm.py"] + sys.argv[1:])
    block = table(run(args), command, args.interval_ms)
    print(block)
    if args.results:
        lm.write_block(args.results, block, BEGIN.split(" (")[0], END)


if __name__ == "__main__":
    main()
