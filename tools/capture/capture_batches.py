#!/usr/bin/env python3
"""tools/capture/capture_batches.py: captures the first Produce request of
several independent producers (idempotent, transactional, plain, compressed,
pre-KIP-98 message sets) for tests/codec/record_batch_test.cc, with the values
the batch header must carry taken from outside our code: the producer id and
epoch from the broker's own InitProducerId answer, the record count from what
the script produced.

  tools/capture/capture_batches.py --mockcluster build/tools/epochgate-mockcluster \
      --out tests/codec/golden/record_batches

Every client goes through tools/capture/kafka_relay.py in front of one broker
of librdkafka's mock cluster, which is made to advertise the relay. Loopback
only; takes about 20 s. Re-running replaces the folder (ids and timestamps
differ between runs). Test tooling only.
"""

import argparse
import os
import shutil
import struct
import subprocess
import sys
import threading
import time

from kafka_relay import Relay  # noqa: E402

RDK_2151 = os.path.expanduser("~/.cache/epochgate/librdkafka-2.15.1/lib")

# confluent-kafka (Debian's python3-confluent-kafka) over the librdkafka it is
# given: Debian's 2.0.2, or 2.15.1 through LD_LIBRARY_PATH (same ABI).
CONFLUENT_SCRIPT = r"""
import json, sys
from confluent_kafka import Producer
bootstrap, conf, count, txn = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == '1'
conf.update({'bootstrap.servers': bootstrap, 'linger.ms': 200})
p = Producer(conf)
errors = []
def dr(err, msg):
    if err is not None:
        errors.append(str(err))
if txn:
    p.init_transactions(10)
    p.begin_transaction()
for i in range(count):
    p.produce('rb', key=b'k%d' % i, value=b'record batch value %d' % i, partition=0, on_delivery=dr)
if txn:
    p.commit_transaction(10)
left = p.flush(10)
if left or errors:
    sys.exit('not delivered: %d left, errors %s' % (left, errors))
"""

KAFKA_PYTHON_SCRIPT = r"""
import json, sys
from kafka import KafkaProducer
bootstrap, conf, count = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
if 'api_version' in conf:
    conf['api_version'] = tuple(conf['api_version'])
p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=200, **conf)
fs = [p.send('rb', key=b'k%d' % i, value=b'record batch value %d' % i, partition=0)
      for i in range(count)]
p.flush(10)
for f in fs:
    f.get(10)
p.close(10)
"""

# (source, client, config, messages, transactional)
CASES = [
    ("librdkafka-2.15.1-idempotent", "rdk2151", {"enable.idempotence": True}, 3, False),
    ("librdkafka-2.15.1-idempotent-lz4", "rdk2151",
     {"enable.idempotence": True, "compression.type": "lz4"}, 4, False),
    ("librdkafka-2.15.1-transactional", "rdk2151", {"transactional.id": "rb-txn-2151"}, 3, True),
    ("librdkafka-2.15.1-plain", "rdk2151", {"enable.idempotence": False, "acks": 1}, 2, False),
    ("librdkafka-2.0.2-idempotent", "rdk202", {"enable.idempotence": True}, 3, False),
    ("librdkafka-2.0.2-transactional", "rdk202", {"transactional.id": "rb-txn-202"}, 2, True),
    ("kafka-python-2.0.2", "kafka-python", {"acks": 1}, 3, False),
    # api_version 0.10.1 makes kafka-python send Produce v2 with a magic 1 message set.
    ("kafka-python-2.0.2-magic1", "kafka-python", {"acks": 1, "api_version": [0, 10, 1]}, 2, False),
]


class Frames:
    """Produce requests and InitProducerId responses, per relay source."""

    def __init__(self):
        self.lock = threading.Lock()
        self.produce = {}   # source -> (version, frame) of the first Produce request
        self.pid = {}       # source -> (producer id, epoch) from InitProducerId

    def __call__(self, source, direction, key, ver, frame):
        with self.lock:
            if direction == "request" and key == 0 and source not in self.produce:
                self.produce[source] = (ver, frame)
            elif direction == "response" and key == 22 and source not in self.pid:
                # size, correlation id, [tagged fields byte from v2], throttle, error, id, epoch
                at = 8 + (1 if ver >= 2 else 0) + 4
                (err, pid, epoch) = struct.unpack(">hqh", frame[at:at + 12])
                if err == 0:
                    self.pid[source] = (pid, epoch)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mockcluster", required=True, help="path to epochgate-mockcluster")
    ap.add_argument("--out", required=True, help="output folder (replaced)")
    args = ap.parse_args()

    frames = Frames()
    mock = subprocess.Popen([args.mockcluster, "--brokers", "1", "--topic", "rb:1:1"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    first = mock.stdout.readline().split()
    if len(first) != 2 or first[0] != "BOOTSTRAP":
        raise SystemExit(f"mock cluster did not start: {first}")
    relay = Relay(first[1].split(",")[0], frames)
    boot = f"127.0.0.1:{relay.port}"
    mock.stdin.write(f"advertise 1 127.0.0.1 {relay.port}\n")
    mock.stdin.flush()
    if not mock.stdout.readline().startswith("OK"):
        raise SystemExit("mock cluster refused advertise")
    expected = {}
    try:
        for source, client, conf, count, txn in CASES:
            relay.source = source
            env = dict(os.environ)
            if client == "rdk2151":
                env["LD_LIBRARY_PATH"] = RDK_2151
            if client == "kafka-python":
                cmd = ["/usr/bin/python3", "-c", KAFKA_PYTHON_SCRIPT, boot, json_dumps(conf),
                       str(count)]
            else:
                cmd = ["/usr/bin/python3", "-c", CONFLUENT_SCRIPT, boot, json_dumps(conf),
                       str(count), "1" if txn else "0"]
            print("+", source, flush=True)
            subprocess.run(cmd, env=env, timeout=60, check=True)
            time.sleep(0.3)
            expected[source] = (count, txn)
    finally:
        mock.stdin.write("quit\n")
        mock.stdin.flush()
        try:
            mock.wait(timeout=20)
        except subprocess.TimeoutExpired:
            mock.kill()
        relay.close()

    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    lines = ["# file produce_version source producer_id producer_epoch record_count "
             "transactional (written by tools/capture/capture_batches.py; producer id and "
             "epoch from the mock broker's InitProducerId answer, -1 -1 without one)"]
    for source, _, _, _, _ in CASES:
        if source not in frames.produce:
            raise SystemExit(f"{source}: no Produce request seen")
        ver, frame = frames.produce[source]
        name = f"{source}.bin"
        with open(os.path.join(args.out, name), "wb") as fh:
            fh.write(frame)
        pid, epoch = frames.pid.get(source, (-1, -1))
        count, txn = expected[source]
        lines.append(f"{name} {ver} {source} {pid} {epoch} {count} {1 if txn else 0}")
    with open(os.path.join(args.out, "manifest.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def json_dumps(v):
    import json
    return json.dumps(v)


if __name__ == "__main__":
    main()
