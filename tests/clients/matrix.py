"""The client matrix: every driver in clients.json through every operation,
straight at one cluster and through one epochgate in front of it, in one
run; writes build/clients/results-<cluster>.json for
tools/clients/gen_compatibility.py and returns what the test asserts on.

Per (client, cell) and path ("direct", "epochgate"): a fresh topic, the
reference producer (straight at the cluster) first where the cell consumes,
the driver with --timeout-ms, and for the *-move cells the leaders of the
topic moved while the driver runs, then the --out files (and, for
produce-move, the topic read back by the reference reader) checked for
loss, duplicates and order. Metadata and admin answers are checked to name
only the path's addresses (the cluster's, or epochgate's).

Clients run two at a time (one cluster, small record counts); the cells of
one client run in order, each straight and through epochgate at once (the
*-move cells one path after the other, so their recovery times compare).
"""

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
import clusters  # noqa: E402
import verify  # noqa: E402

RECORDS = 50
MOVE_RECORDS = 300
MOVE_RATE = 100          # records/s: 3 s of traffic once the client is under way
TIMEOUT_MS = 30000
# KafkaJS 2.2.4's group on the mock cluster stops fetching a moved partition
# for 18-41 s before it reads on (on both paths, in every run seen); at 45 s
# the cell passed or failed by a second's luck, on either path.
MOVE_TIMEOUT_MS = 90000
WORKERS = 2


class Cell:
    def __init__(self, name, op, args=(), partitions=3, config=None, prefill=0, move=False, title=None,
                 timeout_ms=TIMEOUT_MS):
        self.name, self.op, self.args = name, op, list(args)
        self.timeout_ms = timeout_ms
        self.partitions, self.config, self.prefill, self.move = partitions, config, prefill, move
        self.title = title or name


CELLS = [
    Cell("metadata", "metadata"),
    Cell("produce-acks0", "produce", ["--acks", "0"]),
    Cell("produce-acks1", "produce", ["--acks", "1"]),
    Cell("produce-acksall", "produce", ["--acks", "all"]),
    Cell("produce-idempotent", "produce-idempotent"),
    Cell("transactions", "transactions"),
    Cell("compression-gzip", "produce", ["--compression", "gzip"]),
    Cell("compression-snappy", "produce", ["--compression", "snappy"]),
    Cell("compression-lz4", "produce", ["--compression", "lz4"]),
    Cell("compression-zstd", "produce", ["--compression", "zstd"]),
    Cell("consume-assign", "consume-assign", prefill=RECORDS),
    Cell("consume-group-classic", "consume-group", ["--group-protocol", "classic"], prefill=RECORDS),
    Cell("consume-group-consumer", "consume-group", ["--group-protocol", "consumer"], prefill=RECORDS,
         title="consume-group (KIP-848)"),
    Cell("offsets", "offsets"),
    Cell("large-record", "large-record", ["--record-size", "1048576"],
         config={"max.message.bytes": "2097152"}),
    # 200 new partitions, each written with acks=all: the brokers' replica
    # fetchers must take up every one first, seconds on a loaded machine.
    Cell("many-partitions", "many-partitions", partitions=200, timeout_ms=2 * TIMEOUT_MS),
    Cell("admin", "admin"),
    Cell("share-consume", "share-consume", prefill=RECORDS),
    Cell("produce-move", "produce-move", move=True),
    Cell("consume-move", "consume-move", move=True),
]


def cache_root():
    return os.environ.get("EPOCHGATE_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "epochgate"))


def load_registry(path=os.path.join(HERE, "clients.json")):
    with open(path) as f:
        reg = json.load(f)
    for c in reg["clients"]:
        c["argv"] = [a.replace("{cache}", cache_root()).replace("{repo}", ROOT) for a in c["command"]]
    return reg


def fetch_clients(reg):
    """Runs each distinct fetch script once (idempotent, cached by a marker);
    returns {script: error text} for the ones that failed."""
    failed = {}
    for script in sorted({c["fetch"] for c in reg["clients"] if c.get("fetch")}):
        path = os.path.join(ROOT, script)
        if not os.path.exists(path):
            failed[script] = "%s does not exist" % script
            continue
        r = subprocess.run([path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=1200)
        if r.returncode != 0:
            failed[script] = r.stdout.decode(errors="replace")[-2000:]
    return failed


def _safe(text):
    return re.sub(r"[^A-Za-z0-9._-]", "-", text)


class Matrix:
    def __init__(self, h, cluster, reg, workdir, clients=None, cells=None):
        self.h, self.cluster, self.reg = h, cluster, reg
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.clients = [c for c in reg["clients"] if not clients or c["name"] in clients]
        self.cells = [c for c in CELLS if not cells or c.name in cells]
        self.ref = next(c for c in reg["clients"] if c["name"] == reg["reference"][cluster.name])
        self.gate = h.start_gate(cluster.bootstrap)
        self.gate_ports = clusters.gate_ports(self.gate)
        self.log_lock = threading.Lock()
        # A row per finished cell, as it finishes: in a file, not on stdout,
        # so a failing test's output (which CI shortens) starts with the
        # assertion that names the cell, not with a hundred passing rows.
        self.progress_path = os.path.join(workdir, "progress.log")
        if os.path.exists(self.progress_path):
            os.remove(self.progress_path)

    # -- one driver call
    def run_driver(self, client, op, bootstrap, topic, partitions, args, tag, timeout_ms=TIMEOUT_MS, out=None):
        argv = client["argv"] + [op, "--bootstrap", bootstrap, "--topic", topic,
                                 "--partitions", str(partitions), "--timeout-ms", str(timeout_ms),
                                 "--group", "g-" + topic, "--transactional-id", "tx-" + topic] + args
        if out:
            argv += ["--out", out]
        log = os.path.join(self.workdir, _safe(tag) + ".log")
        t0 = time.monotonic()
        with open(log, "w") as f:
            f.write("$ %s\n" % " ".join(argv))
            f.flush()
            try:
                p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=f, timeout=timeout_ms / 1000 + 15,
                                   cwd=self.workdir, start_new_session=True)
                stdout, rc = p.stdout.decode(errors="replace"), p.returncode
            except subprocess.TimeoutExpired as e:
                stdout, rc = (e.stdout or b"").decode(errors="replace"), "timeout"
            f.write("\n--- stdout (rc=%s, %.1fs)\n%s" % (rc, time.monotonic() - t0, stdout))
        lines = [l for l in stdout.splitlines() if l.strip().startswith("{")]
        if not lines:
            return {"status": "failed", "log": os.path.basename(log),
                    "error": "driver printed no result line (exit %s)" % rc}
        try:
            res = json.loads(lines[-1])
        except ValueError:
            return {"status": "failed", "error": "unreadable result line %r" % lines[-1][:200]}
        if res.get("status") not in ("ok", "failed", "unsupported"):
            res["status"] = "failed"
        return res

    # -- one cell on one path
    def run_cell(self, client, cell, path):
        bootstrap = self.cluster.bootstrap if path == "direct" else self.gate.bootstrap
        topic = _safe("m.%s.%s.%s" % (client["name"], cell.name, path))
        tag = "%s.%s.%s" % (client["name"], cell.name, path)
        records = MOVE_RECORDS if cell.move else RECORDS
        args = cell.args + ["--records", str(records)]
        try:
            self.cluster.create_topic(topic, cell.partitions, cell.config)
            if cell.prefill:
                pre = self.run_driver(self.ref, "produce", self.cluster.bootstrap, topic, cell.partitions,
                                      ["--records", str(cell.prefill)], tag + ".prefill")
                if pre.get("status") != "ok":
                    return {"status": "failed", "error": "reference producer failed: %s" % pre.get("error")}
            if cell.move:
                res = self.run_move(client, cell, topic, bootstrap, args, tag, records)
            else:
                res = self.run_driver(client, cell.op, bootstrap, topic, cell.partitions, args, tag,
                                      timeout_ms=cell.timeout_ms)
        except Exception as e:  # a cluster step failed: the cell failed, the run goes on
            return {"status": "failed", "error": "harness: %s: %s" % (type(e).__name__, e)}
        finally:
            # The run creates some 360 topics, 3600 partitions of them in
            # many-partitions: kept, they took a broker's 256 MiB heap
            # (OutOfMemoryError in its replica fetcher) late in a run.
            try:
                self.cluster.delete_topic(topic)
            except Exception as e:
                print("    harness: deleting %s: %s" % (topic, e), flush=True)
        if cell.op in ("metadata", "admin") and res.get("status") == "ok":
            self.check_addresses(res, path)
        if cell.op == "metadata" and res.get("status") == "ok" and res.get("partitions") != cell.partitions:
            res["status"], res["error"] = "failed", "saw %s partitions, not %d" % (res.get("partitions"), cell.partitions)
        return res

    def check_addresses(self, res, path):
        allowed = self.gate_ports if path == "epochgate" else self.cluster.ports
        seen = {int(p) for _, p in res.get("brokers", [])}
        res["foreign_addresses"] = sorted(seen - set(allowed))
        if not seen:
            res["status"], res["error"] = "failed", "no broker address reported"
        elif res["foreign_addresses"]:
            res["status"] = "failed"
            res["error"] = "learned addresses outside this path's: ports %s" % res["foreign_addresses"]

    def run_move(self, client, cell, topic, bootstrap, args, tag, records):
        """The driver (produce-move or consume-move) runs on `bootstrap`
        while every leader of the topic moves once; the reference producer
        feeds consume-move straight at the cluster."""
        out = os.path.join(self.workdir, _safe(tag) + ".out")
        if os.path.exists(out):
            os.remove(out)  # a file left by an earlier run is no sign of this client's progress
        args = args + ["--rate", str(MOVE_RATE)]
        results = {}

        def go(name, *a, **k):
            results[name] = self.run_driver(*a, **k)

        threads = [threading.Thread(target=go, args=("client", client, cell.op, bootstrap, topic, cell.partitions, args, tag),
                                    kwargs={"timeout_ms": MOVE_TIMEOUT_MS, "out": out})]
        if cell.op == "consume-move":
            threads.append(threading.Thread(target=go, args=(
                "feed", self.ref, "produce-move", self.cluster.bootstrap, topic, cell.partitions,
                ["--records", str(records), "--rate", str(MOVE_RATE)], tag + ".feed"),
                kwargs={"timeout_ms": MOVE_TIMEOUT_MS, "out": out + ".feed"}))
        for t in threads:
            t.start()
        # The move must land while the client produces or consumes, not
        # while it is still starting or joining its group (how long that
        # takes depends on the client and the machine's load): the leaders
        # move once the client has written its first acknowledged or
        # received record to --out.
        under_way = wait_first_line(out, threads[0], MOVE_TIMEOUT_MS / 1000)
        move_ms = self.cluster.move_all(topic)
        for t in threads:
            t.join()
        res = results["client"]
        res["move_ms"] = round(move_ms, 1)
        res["moved_after_first_record"] = under_way
        if cell.op == "consume-move" and results["feed"].get("status") != "ok":
            res["feed_error"] = results["feed"].get("error")
        if res.get("status") != "ok":
            return res
        rows = verify.read_out(out)
        if cell.op == "produce-move":
            dump = out + ".topic"
            # A leader elected a moment ago may answer ListOffsets with a
            # high watermark still behind what the old leader acknowledged,
            # so the reader stops short. Read again, within a bound, until
            # every partition reaches the highest offset the client was
            # acknowledged there.
            acked_end = {}
            for p, off, _, _ in rows:
                acked_end[p] = max(acked_end.get(p, -1), off)
            deadline = time.monotonic() + 30
            while True:
                d = self.run_driver(self.ref, "consume-assign", self.cluster.bootstrap, topic, cell.partitions,
                                    ["--records", "0"], tag + ".readback", out=dump)
                if d.get("status") != "ok":
                    res["status"], res["error"] = "failed", "reading the topic back failed: %s" % d.get("error")
                    return res
                read_end = {}
                for p, off, _, _ in verify.read_out(dump):
                    read_end[p] = max(read_end.get(p, -1), off)
                if all(read_end.get(p, -1) >= off for p, off in acked_end.items()) or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            res["verify"] = verify.check_topic(rows, verify.read_out(dump), records)
        else:
            res["verify"] = verify.check(rows, records)
        if not verify.clean(res["verify"]):
            res["status"] = "failed"
            res["error"] = "lost %(lost)d, duplicated %(duplicates)d, reordered partitions %(reordered)d" % res["verify"]
        return res

    # -- the whole matrix
    def run_client(self, client):
        rows = []
        for cell in self.cells:
            row = {"client": client["name"], "version": client["version"], "cell": cell.name, "op": cell.op}
            if cell.op not in client["ops"]:
                row["direct"] = row["epochgate"] = {"status": "not-run",
                                                    "error": "the driver does not implement %s" % cell.op}
            elif cell.move:
                # One at a time: the recovery times compare the two paths.
                for path in ("direct", "epochgate"):
                    row[path] = self.run_cell(client, cell, path)
            else:
                # Both paths at once, each on its own topic and group.
                both = {}
                t = threading.Thread(target=lambda: both.update(direct=self.run_cell(client, cell, "direct")))
                t.start()
                both["epochgate"] = self.run_cell(client, cell, "epochgate")
                t.join()
                row.update(both)
            rows.append(row)
            with self.log_lock, open(self.progress_path, "a") as f:
                f.write("%-28s %-24s direct %-11s epochgate %s\n" % (
                    client["name"], cell.name, row["direct"]["status"], row["epochgate"]["status"]))
        return rows

    def run(self, missing=None):
        t0 = time.monotonic()
        rows = []
        runnable = []
        for c in self.clients:
            why = (missing or {}).get(c["name"]) or c.get("not_on", {}).get(self.cluster.name)
            if why:
                for cell in self.cells:
                    rows.append({"client": c["name"], "version": c["version"], "cell": cell.name, "op": cell.op,
                                 "direct": {"status": "not-run", "error": why},
                                 "epochgate": {"status": "not-run", "error": why}})
            else:
                runnable.append(c)
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
            for result in pool.map(self.run_client, runnable):
                rows += result
        order = {c["name"]: i for i, c in enumerate(self.reg["clients"])}
        cell_order = {c.name: i for i, c in enumerate(CELLS)}
        rows.sort(key=lambda r: (order[r["client"]], cell_order[r["cell"]]))
        return {
            "cluster": self.cluster.name,
            "cluster_label": self.cluster.label,
            "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "seconds": round(time.monotonic() - t0, 1),
            "settings": {"records": RECORDS, "move_records": MOVE_RECORDS, "move_rate": MOVE_RATE,
                         "timeout_ms": TIMEOUT_MS},
            "clients": [{k: c[k] for k in ("name", "version", "language", "from")} for c in self.clients],
            "cells": [{"name": c.name, "op": c.op, "title": c.title} for c in self.cells],
            "results": rows,
        }


def wait_first_line(path, thread, bound_s):
    """True once `path` holds a whole line; False when `thread` (the
    driver) ended or `bound_s` passed first."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline and thread.is_alive():
        try:
            with open(path, "rb") as f:
                if b"\n" in f.read(256):
                    return True
        except OSError:
            pass
        time.sleep(0.02)
    return False


def _runnable(program):
    """A path that is executable, or a bare name found on PATH (node)."""
    if os.sep not in program:
        return shutil.which(program) is not None
    return os.access(program, os.X_OK)


def missing_clients(reg):
    """{client: why it cannot run} for drivers whose program is not there
    after the fetch scripts ran."""
    failed = fetch_clients(reg)
    missing = {}
    for c in reg["clients"]:
        if c.get("fetch") in failed:
            missing[c["name"]] = "fetch failed: %s" % failed[c["fetch"]].strip().splitlines()[-1:]
        elif not _runnable(c["argv"][0]):
            missing[c["name"]] = "%s not there (run %s)" % (c["argv"][0], c.get("fetch"))
    return missing


def write_results(results, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
        f.write("\n")
