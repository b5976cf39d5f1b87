"""The driver protocol's command line and result line, shared by the Python
drivers (tests/clients/<client>/driver.py). A driver hands `run` its ops;
this module parses the options, keeps the overall --timeout-ms bound with a
watchdog (a library call that blocks past it still ends the process with a
"failed" line), and prints the one JSON result line the harness reads.
"""

import argparse
import json
import os
import sys
import threading
import time

OPS = ("metadata", "produce", "produce-idempotent", "transactions", "consume-assign",
       "consume-group", "offsets", "large-record", "many-partitions", "admin",
       "share-consume", "produce-move", "consume-move")


class Failed(Exception):
    """The op ran and did not do what the protocol asks."""


class Unsupported(Exception):
    """The library cannot do this op; the message says why."""


def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("op", choices=OPS)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, default=0)
    p.add_argument("--records", type=int, default=100)
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--acks", default="all", choices=("0", "1", "all"))
    p.add_argument("--compression", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd"))
    p.add_argument("--group", default="")
    p.add_argument("--group-protocol", default="classic", choices=("classic", "consumer"))
    p.add_argument("--rate", type=float, default=0)
    p.add_argument("--transactional-id", default="")
    p.add_argument("--out", default="")
    p.add_argument("--timeout-ms", type=int, default=30000)
    a = p.parse_args(argv)
    if not a.group:
        a.group = "g-" + a.topic
    if not a.transactional_id:
        a.transactional_id = "txn-" + a.topic
    a.started = time.monotonic()
    a.deadline = a.started + a.timeout_ms / 1000.0
    return a


def remaining(a, reserve=0.0):
    """Seconds left before the op's bound, less `reserve` for cleanup."""
    return max(0.0, a.deadline - time.monotonic() - reserve)


def expired(a):
    return time.monotonic() >= a.deadline


def key(i):
    return "k%d" % i


def value(i, size, prefix=""):
    """Record i's value: its index (with the op's prefix), padded with 'x'."""
    head = "%s%d" % (prefix, i)
    return head + "x" * max(0, size - len(head))


def index_of(v):
    """The value index back from a value (prefix letters and padding dropped)."""
    if isinstance(v, (bytes, bytearray)):
        v = v.decode(errors="replace")
    digits = "".join(ch for ch in v.rstrip("x").lstrip("ca") if ch.isdigit())
    return int(digits) if digits else -1


class Pacer:
    """Spaces sends to --rate per second (0: no pacing)."""

    def __init__(self, rate):
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.next = time.monotonic()

    def wait(self):
        if self.interval:
            delay = self.next - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self.next = max(self.next + self.interval, time.monotonic() - self.interval)


class MoveLog:
    """The *-move ops' --out file ("<partition> <offset> <index> <ms>"),
    written line by line as the events happen (the harness waits for the
    first one before it moves leaders), and the longest gap between
    consecutive events."""

    def __init__(self, a):
        self.start = a.started
        self.f = open(a.out, "w", buffering=1) if a.out else None
        self.last = None
        self.max_gap_ms = 0.0
        self.count = 0
        self.lock = threading.Lock()

    def event(self, partition, offset, index):
        now = time.monotonic()
        with self.lock:
            if self.last is not None:
                self.max_gap_ms = max(self.max_gap_ms, (now - self.last) * 1000.0)
            self.last = now
            self.count += 1
            if self.f:
                self.f.write("%d %d %d %.1f\n" % (partition, offset, index, (now - self.start) * 1000.0))

    def close(self):
        with self.lock:
            if self.f:
                self.f.close()
                self.f = None


_printed = threading.Lock()


def _emit(result, code):
    """Prints the result line once (the watchdog and the op may race)."""
    if not _printed.acquire(blocking=False):
        return
    sys.stderr.flush()
    os.write(1, (json.dumps(result) + "\n").encode())
    if code is not None:
        os._exit(code)


def run(client, version, ops, unsupported=None, argv=None):
    """Runs one op. `ops`: op name -> fn(args) returning a dict (at least
    "records"); `unsupported`: op name -> reason."""
    a = parse(sys.argv[1:] if argv is None else argv)
    base = {"client": client, "version": version, "op": a.op}

    def watchdog():
        _emit(dict(base, status="failed", records=0,
                   error="no result within --timeout-ms %d (the library call did not return)" % a.timeout_ms,
                   elapsed_ms=round((time.monotonic() - a.started) * 1000.0, 1)), 1)

    # A little past the bound: an op that honours its own deadline reports first.
    timer = threading.Timer(a.timeout_ms / 1000.0 + 2.0, watchdog)
    timer.daemon = True
    timer.start()
    result = dict(base, status="ok", error="", records=0)
    code = 0
    try:
        if unsupported and a.op in unsupported:
            raise Unsupported(unsupported[a.op])
        if a.op not in ops:
            raise Unsupported("not implemented in this driver")
        result.update(ops[a.op](a) or {})
    except Unsupported as e:
        result.update(status="unsupported", error=str(e))
    except Failed as e:
        result.update(status="failed", error=str(e))
        code = 1
    except Exception as e:  # a library error is a failed op, with its text
        result.update(status="failed", error="%s: %s" % (type(e).__name__, e))
        code = 1
    result["elapsed_ms"] = round((time.monotonic() - a.started) * 1000.0, 1)
    timer.cancel()
    _emit(result, None)
    # Library threads (librdkafka, asyncio executors) must not hold the exit.
    sys.stdout.flush()
    os._exit(code)
