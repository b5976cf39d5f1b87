#!/usr/bin/env python3
"""bench/compare_builds.py: is a new epochgate build slower than an older one?

Runs epochgate-bench's produce and consume scenarios against two epochgate
binaries in turn (old, new, old, new, ... so that the shared machine's noise
falls on both alike) and prints, per workload, the new build's ratio to the
old one: throughput of (d) epochgate enforce, each normalised by the same
run's (a) direct, and proxy CPU seconds per GB. A ratio near 1.0 is "no
regression"; the spread between rounds says how much of a difference is noise.

usage: bench/compare_builds.py --bench BIN --old EPOCHGATE --new EPOCHGATE
                               [--haproxy BIN] [--pairs N] [--rounds R]
                               [--out DIR] [--markdown FILE]
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--haproxy", default="")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="/tmp/epochgate-compare-builds")
    ap.add_argument("--markdown", default="")
    args = ap.parse_args()

    started = time.time()
    load0 = open("/proc/loadavg").read().split()[:3]
    ratios = {}  # workload -> {"tput": [...], "cpu": [...]}
    for i in range(args.pairs):
        old = run_once(args, args.old, f"{args.out}/old-{i}")
        new = run_once(args, args.new, f"{args.out}/new-{i}")
        for (workload, config), (rate, cpu) in new.items():
            if config != "(d)" or (workload, "(d)") not in old:
                continue
            o_rate, o_cpu = old[(workload, "(d)")]
            n_direct = new.get((workload, "(a)"), (None, None))[0]
            o_direct = old.get((workload, "(a)"), (None, None))[0]
            r = ratios.setdefault(workload, {"tput": [], "cpu": []})
            if n_direct and o_direct:
                r["tput"].append((rate / n_direct) / (o_rate / o_direct))
            if cpu and o_cpu:
                r["cpu"].append(cpu / o_cpu)
    load1 = open("/proc/loadavg").read().split()[:3]

    lines = [
        f"Old build `{args.old}`, new build `{args.new}`; {args.pairs} pairs of "
        f"`epochgate-bench --only produce,consume --rounds {args.rounds}`, alternating; "
        f"{time.time() - started:.0f} s wall; load average {' '.join(load0)} -> {' '.join(load1)}.",
        "",
        "| Workload | throughput new/old ((d)/(a) of each run), per pair | median | "
        "CPU s/GB new/old, per pair | median |",
        "|---|---|---|---|---|",
    ]
    for workload, r in ratios.items():
        t = ", ".join(f"{x:.3f}" for x in r["tput"]) or "-"
        c = ", ".join(f"{x:.3f}" for x in r["cpu"]) or "-"
        tm = f"{statistics.median(r['tput']):.3f}" if r["tput"] else "-"
        cm = f"{statistics.median(r['cpu']):.3f}" if r["cpu"] else "-"
        lines.append(f"| {workload} | {t} | {tm} | {c} | {cm} |")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text)
    return 0 if ratios else 1


if __name__ == "__main__":
    sys.exit(main())
