#!/usr/bin/python3
"""Plots a soak's epochgate RSS and open descriptors over time.

    /usr/bin/python3 tools/soak/plot_rss.py RSS_CSV OUT_PNG [--title TEXT] [--warmup-s S]

RSS_CSV is the soak's rss.csv (t_s,rss_bytes,open_fds; tools/soak/soak.py
writes it in its work directory). Draws RSS in MiB with the post-warm-up
baseline (mean of the first 3 samples after warm-up, as the soak judges it)
and the soak's 10 % bound, and the descriptors on a second axis. Needs
Debian's python3-matplotlib.
"""

import argparse
import csv
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--title", default="epochgate RSS during the soak")
    ap.add_argument("--warmup-s", type=float, default=60.0)
    o = ap.parse_args()
    t, rss, fds = [], [], []
    with open(o.csv) as f:
        for row in csv.DictReader(f):
            t.append(float(row["t_s"]) / 60.0)
            rss.append(int(row["rss_bytes"]) / 2**20)
            fds.append(int(row["open_fds"]))
    after = [r for m, r in zip(t, rss) if m * 60.0 >= o.warmup_s] or rss
    base = statistics.mean(after[:3])
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    ax.plot(t, rss, color="tab:blue", linewidth=1.2, label="RSS (MiB)")
    ax.axhline(base, color="tab:green", linestyle="--", linewidth=1,
               label="baseline after warm-up %.2f MiB" % base)
    ax.axhline(base * 1.10, color="tab:red", linestyle=":", linewidth=1,
               label="soak bound +10 %% (%.2f MiB)" % (base * 1.10))
    ax.axvline(o.warmup_s / 60.0, color="grey", linewidth=0.8)
    ax.set_xlabel("minutes")
    ax.set_ylabel("RSS (MiB)")
    ax.set_ylim(0, max(max(rss), base * 1.10) * 1.15)
    ax2 = ax.twinx()
    ax2.plot(t, fds, color="tab:orange", linewidth=0.8, alpha=0.7, label="open fds")
    ax2.set_ylabel("open descriptors")
    ax2.set_ylim(0, max(fds) * 1.5)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="lower right", fontsize=8)
    ax.set_title(o.title, fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(o.png)


if __name__ == "__main__":
    main()
