#!/usr/bin/python3
"""tools/capture/capture_golden.py: captures golden Kafka frames exchanged by
independent implementations, for tests/codec/golden/.

  /usr/bin/python3 tools/capture/capture_golden.py \
      --peer BUILD/tools/capture/epochgate-golden-peer --out tests/codec/golden

Runs epochgate-golden-peer (librdkafka 2.15.1's mock cluster, one broker,
advertising the relay), puts kafka_relay.Relay in front of it, and drives, in
turn: librdkafka 2.15.1 clients (golden_peer), kcat (Debian) and kafka-python
(Debian, /usr/bin/python3). The broker side of every frame is the mock
cluster. For each (source, direction, API, version) of the APIs the codec
decodes it keeps the first two distinct frames and the largest one, writes
them as <source>/<dir>_<api>_v<ver>_<n>.bin and lists them in manifest.txt.
Must never: run outside 127.0.0.1, or keep frames of APIs the codec does not
decode (they are not tested).
"""

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time

from kafka_relay import Relay  # noqa: E402

DECODED = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 10: "FindCoordinator",
           18: "ApiVersions", 23: "OffsetForLeaderEpoch", 60: "DescribeCluster",
           78: "ShareFetch", 79: "ShareAcknowledge", 83: "InitializeShareGroupState",
           84: "ReadShareGroupState", 85: "WriteShareGroupState", 86: "DeleteShareGroupState",
           87: "ReadShareGroupStateSummary"}

KAFKA_PYTHON_SCRIPT = r"""
import sys
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
bootstrap = sys.argv[1]
p = KafkaProducer(bootstrap_servers=bootstrap, acks='all', client_id='golden-kafka-python')
for i in range(5):
    p.send('golden', key=b'kp%d' % i, value=b'kafka-python value %d' % i, partition=0)
p.flush(10)
p.close(10)
c = KafkaConsumer(bootstrap_servers=bootstrap, group_id='golden-kp-group',
                  client_id='golden-kafka-python', auto_offset_reset='earliest',
                  enable_auto_commit=False, consumer_timeout_ms=4000)
c.subscribe(['golden'])
n = 0
for m in c:
    n += 1
    if n >= 5:
        break
c.commit()
tp = TopicPartition('golden', 0)
c.end_offsets([tp])
c.beginning_offsets([tp])
c.offsets_for_times({tp: 1000})
c.close()
print('consumed', n)
sys.exit(0 if n > 0 else 1)
"""


class Store:
    """Keeps a few distinct frames per (source, direction, api, version)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.buckets = {}  # key -> {"first": [bytes], "largest": bytes|None}
        self.seen = {}

    def __call__(self, source, direction, key, ver, frame):
        with self.lock:
            self.seen[(source, direction, key, ver)] = self.seen.get(
                (source, direction, key, ver), 0) + 1
            if key not in DECODED:
                return
            b = self.buckets.setdefault((source, direction, key, ver),
                                        {"first": [], "largest": None})
            if frame in b["first"] or frame == b["largest"]:
                return
            if len(b["first"]) < 2:
                b["first"].append(frame)
            elif b["largest"] is None or len(frame) > len(b["largest"]):
                b["largest"] = frame


def expect(peer, what):
    line = peer.stdout.readline().strip()
    if line != "ok":
        raise SystemExit(f"golden peer: {what}: {line!r}")


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, timeout=60, check=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", required=True, help="path to epochgate-golden-peer")
    ap.add_argument("--out", required=True, help="output folder (replaced)")
    ap.add_argument("--kcat", default="/usr/bin/kcat")
    args = ap.parse_args()

    store = Store()
    peer = subprocess.Popen([args.peer], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    first = peer.stdout.readline().split()
    if len(first) != 2 or first[0] != "bootstrap":
        raise SystemExit(f"golden peer did not start: {first}")
    upstream = first[1].split(",")[0]
    relay = Relay(upstream, store)
    boot = f"127.0.0.1:{relay.port}"
    peer.stdin.write(f"advertise {relay.port}\n")
    peer.stdin.flush()
    expect(peer, "advertise")

    # "Version 1.7.1 (..., librdkafka 2.0.2 ...)" -> "kcat-1.7.1-librdkafka-2.0.2"
    kcat_source = "kcat"
    for l in subprocess.run([args.kcat, "-V"], capture_output=True, text=True).stdout.splitlines():
        if l.startswith("Version "):
            w = l.replace("(", " ").replace(",", " ").split()
            kcat_source = "kcat-" + w[1]
            if "librdkafka" in w:
                kcat_source += "-librdkafka-" + w[w.index("librdkafka") + 1]
    import importlib.util
    kp_version = "2.0.2"
    if importlib.util.find_spec("kafka"):
        import kafka  # noqa: F401 (only its version)
        kp_version = kafka.__version__
    sources = []
    try:
        relay.source = "librdkafka-2.15.1"
        sources.append(relay.source)
        for cmd in ("clients", "bump", "validate", "share"):
            peer.stdin.write(cmd + "\n")
            peer.stdin.flush()
            expect(peer, cmd)
            time.sleep(0.5)

        relay.source = kcat_source
        sources.append(relay.source)
        run([args.kcat, "-b", boot, "-L"], stdout=subprocess.DEVNULL)
        run([args.kcat, "-b", boot, "-P", "-t", "golden", "-p", "0", "-K", ":"],
            input=b"kc1:kcat value 1\nkc2:kcat value 2\n")
        run([args.kcat, "-b", boot, "-C", "-t", "golden", "-p", "0", "-o", "beginning", "-e",
             "-c", "3"], stdout=subprocess.DEVNULL)
        run([args.kcat, "-b", boot, "-Q", "-t", "golden:0:1000"], stdout=subprocess.DEVNULL)
        time.sleep(0.5)

        relay.source = f"kafka-python-{kp_version}"
        sources.append(relay.source)
        run(["/usr/bin/python3", "-c", KAFKA_PYTHON_SCRIPT, boot])
        time.sleep(0.5)
    finally:
        try:
            peer.stdin.write("quit\n")
            peer.stdin.flush()
            peer.wait(timeout=20)
        except Exception:  # noqa: BLE001 - best effort shutdown of our child
            peer.kill()
        relay.close()

    if os.path.isdir(args.out):
        for s in os.listdir(args.out):
            p = os.path.join(args.out, s)
            if os.path.isdir(p):
                shutil.rmtree(p)
    os.makedirs(args.out, exist_ok=True)
    lines = []
    for (source, direction, key, ver), b in sorted(store.buckets.items()):
        frames = b["first"] + ([b["largest"]] if b["largest"] else [])
        d = os.path.join(args.out, source)
        os.makedirs(d, exist_ok=True)
        for i, f in enumerate(frames):
            name = f"{'req' if direction == 'request' else 'resp'}_{DECODED[key]}_v{ver}_{i}.bin"
            with open(os.path.join(d, name), "wb") as fh:
                fh.write(f)
            lines.append(f"{source}/{name} {direction} {key} {ver} {source}")
    with open(os.path.join(args.out, "manifest.txt"), "w") as fh:
        fh.write("# file direction api_key api_version source "
                 "(written by tools/capture/capture_golden.py)\n")
        fh.write("\n".join(lines) + "\n")
    print(f"{len(lines)} golden frames from {', '.join(sources)}")
    print("frames seen (source direction api version count):")
    for k in sorted(store.seen):
        name = DECODED.get(k[2], str(k[2]))
        print(f"  {k[0]:22} {k[1]:8} {name:28} v{k[3]:<3} {store.seen[k]}")


if __name__ == "__main__":
    main()
