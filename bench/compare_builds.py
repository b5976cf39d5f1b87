#!/usr/bin/env python3
"""bench/compare_builds.py: is a new epochgate build slower than an older one?

Runs epochgate-bench's produce and consume scenarios against two epochgate
binaries in turn (old, new, new, old, old, new, ... so that the shared
machine's noise, and its drift within a pair, falls on both alike) and prints,
per workload, the new build's ratio to the old one: throughput of (d) epochgate
enforce, each normalised by the same run's (a) direct; proxy CPU seconds per
GB raw, and normalised by the same run's (f) copy relay. The copy relay reads
and writes every byte in user space and does nothing else, so its CPU per GB
moves with what the machine's state does to any proxy (contention for the two
cores and their caches, frequency), which the raw figure cannot tell from a
change in epochgate. A ratio near 1.0 is "no regression"; the spread between
pairs says how much of a difference is noise. The verdict calls a workload
slower when its median throughput ratio is below 1 - TOL or its median
normalised CPU ratio above 1 + TOL.

usage: bench/compare_builds.py --bench BIN --old EPOCHGATE --new EPOCHGATE
                               [--haproxy BIN] [--pairs N] [--rounds R]
                               [--tolerance TOL] [--out DIR] [--markdown FILE]
       bench/compare_builds.py --from DIR [DIR ...] [--tolerance TOL]
           (reads the old-I/new-I results earlier runs left in each DIR)
Never part of the test suite; a run takes about 4 minutes per pair.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

ROW = re.compile(r"^\|\s*(?P<cells>.*)\|\s*$")


def parse(results_md):
    """{(workload, config): (msg_per_s, cpu_s_per_gb or None)} from RESULTS.md."""
    out = {}
    section = None
    for line in open(results_md, encoding="utf-8"):
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        m = ROW.match(line.strip())
        if not m or section not in ("Produce throughput", "Consume throughput"):
            continue
        cells = [c.strip() for c in m.group("cells").split("|")]
        if section == "Produce throughput" and len(cells) == 6 and cells[1].startswith("("):
            workload, config, rate, cpu = cells[0], cells[1], cells[2], cells[5]
        elif section == "Consume throughput" and len(cells) == 4 and cells[0].startswith("("):
            workload, config, rate, cpu = "consume", cells[0], cells[1], cells[3]
        else:
            continue
        try:
            value = float(rate.split()[0])
        except ValueError:
            continue
        cpu_v = None if cpu in ("-", "") else float(cpu)
        out[(workload, config[:3])] = (value, cpu_v)
    return out


def run_once(args, binary, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [args.bench, "--epochgate", binary, "--only", "produce,consume",
           "--rounds", str(args.rounds), "--out", out_dir]
    if args.haproxy:
        cmd += ["--haproxy", args.haproxy]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return parse(os.path.join(out_dir, "RESULTS.md"))


def add_pair(ratios, old, new):
    """Adds one pair's new/old ratios per workload to `ratios`."""
    for (workload, config), (rate, cpu) in new.items():
        if config != "(d)" or (workload, "(d)") not in old:
            continue
        o_rate, o_cpu = old[(workload, "(d)")]
        n_direct = new.get((workload, "(a)"), (None, None))[0]
        o_direct = old.get((workload, "(a)"), (None, None))[0]
        n_relay = new.get((workload, "(f)"), (None, None))[1]
        o_relay = old.get((workload, "(f)"), (None, None))[1]
        r = ratios.setdefault(workload, {"tput": [], "cpu": [], "cpu_rel": []})
        if n_direct and o_direct:
            r["tput"].append((rate / n_direct) / (o_rate / o_direct))
        if cpu and o_cpu:
            r["cpu"].append(cpu / o_cpu)
            if n_relay and o_relay:
                r["cpu_rel"].append((cpu / n_relay) / (o_cpu / o_relay))


def verdict(r, tol):
    """'slower', 'not slower' or 'unmeasured' for one workload's ratios."""
    if not r["tput"] or not r["cpu_rel"]:
        return "unmeasured"
    if statistics.median(r["tput"]) < 1 - tol or statistics.median(r["cpu_rel"]) > 1 + tol:
        return "**slower**"
    return "not slower"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="from_dirs", nargs="+", default=[])
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--bench")
    ap.add_argument("--old")
    ap.add_argument("--new")
    ap.add_argument("--haproxy", default="")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="/tmp/epochgate-compare-builds")
    ap.add_argument("--markdown", default="")
    args = ap.parse_args()

    started = time.time()
    load0 = open("/proc/loadavg").read().split()[:3]
    ratios = {}  # workload -> {"tput": [...], "cpu": [...], "cpu_rel": [...]}
    if args.from_dirs:
        pairs = 0
        for d in args.from_dirs:
            i = 0
            while os.path.exists(f"{d}/old-{i}/RESULTS.md") and os.path.exists(f"{d}/new-{i}/RESULTS.md"):
                add_pair(ratios, parse(f"{d}/old-{i}/RESULTS.md"), parse(f"{d}/new-{i}/RESULTS.md"))
                i += 1
            pairs += i
        head = f"{pairs} pairs read from {', '.join(args.from_dirs)}."
    else:
        if not (args.bench and args.old and args.new):
            ap.error("--bench, --old and --new are required without --from")
        for i in range(args.pairs):
            order = [("old", args.old), ("new", args.new)]
            if i % 2 == 1:
                order.reverse()
            got = {name: run_once(args, binary, f"{args.out}/{name}-{i}") for name, binary in order}
            add_pair(ratios, got["old"], got["new"])
        load1 = open("/proc/loadavg").read().split()[:3]
        head = (f"Old build `{args.old}`, new build `{args.new}`; {args.pairs} pairs of "
                f"`epochgate-bench --only produce,consume --rounds {args.rounds}`, alternating "
                f"(old first in even pairs, new first in odd ones); {time.time() - started:.0f} s "
                f"wall; load average {' '.join(load0)} -> {' '.join(load1)}.")

    def cells(xs):
        return (", ".join(f"{x:.3f}" for x in xs) or "-",
                f"{statistics.median(xs):.3f}" if xs else "-")

    lines = [
        head,
        "",
        "| Workload | throughput new/old ((d)/(a) of each run), per pair | median | "
        "CPU s/GB new/old, per pair | median | CPU s/GB new/old, each over its run's (f) copy "
        f"relay, per pair | median | verdict (tolerance {args.tolerance:.0%}) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for workload, r in ratios.items():
        t, tm = cells(r["tput"])
        c, cm = cells(r["cpu"])
        n, nm = cells(r["cpu_rel"])
        lines.append(f"| {workload} | {t} | {tm} | {c} | {cm} | {n} | {nm} | "
                     f"{verdict(r, args.tolerance)} |")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text)
    return 0 if ratios else 1


if __name__ == "__main__":
    sys.exit(main())
