"""kafka-python (Debian python3-kafka, a client that never reads KIP-951
hints) producing steadily to one partition, for the leader-move scenarios.

Prints "STARTED" once the producer has its metadata, then one JSON line:
{run, version, api_version, sent, acked, errors, first_error, acks
[wall-clock µs of each ack, in send order], max_gap_ms}. Exit 0 when every
message was acknowledged. 77 (and a "SKIP ..." line) when kafka-python is
missing. Every blocking call has a deadline.
"""

import argparse
import json
import sys
import time
import uuid


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partition", type=int, default=0)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--acks", default="all")
    opts = parser.parse_args()
    try:
        import kafka
    except ImportError:
        print("SKIP kafka-python not installed (apt-get install python3-kafka)", flush=True)
        sys.exit(77)
    acks = opts.acks if opts.acks == "all" else int(opts.acks)
    producer = kafka.KafkaProducer(bootstrap_servers=opts.bootstrap, acks=acks, retries=20,
                                   retry_backoff_ms=100, linger_ms=5, request_timeout_ms=10000,
                                   max_in_flight_requests_per_connection=1, max_block_ms=20000,
                                   client_id="epochgate-scenario-kafka-python")
    deadline = time.monotonic() + 15
    while not producer.partitions_for(opts.topic) and time.monotonic() < deadline:
        time.sleep(0.05)
    run = uuid.uuid4().hex[:12]
    out = {"run": run, "version": kafka.__version__, "sent": 0, "acked": 0, "errors": 0,
           "first_error": ""}
    out["api_version"] = ".".join(str(v) for v in producer.config["api_version"])
    acks_us = [None] * opts.messages

    def ok(i):
        def cb(_md):
            acks_us[i] = int(time.time() * 1e6)
        return cb

    def failed(i):
        def cb(exc):
            out["errors"] += 1
            out["first_error"] = out["first_error"] or repr(exc)
        return cb

    print("STARTED", flush=True)
    start = time.monotonic()
    for i in range(opts.messages):
        due = start + i / opts.rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        f = producer.send(opts.topic, value=("%s:%d" % (run, i)).encode(),
                          partition=opts.partition)
        f.add_callback(ok(i)).add_errback(failed(i))
        out["sent"] += 1
    producer.flush(timeout=30)
    producer.close(timeout=10)
    acked = [a for a in acks_us if a is not None]
    out["acked"] = len(acked)
    in_order = sorted(acked)
    gaps = [b - a for a, b in zip(in_order, in_order[1:])]
    out["max_gap_ms"] = max(gaps) / 1000.0 if gaps else 0.0
    out["acks"] = acked
    print(json.dumps(out), flush=True)
    sys.exit(0 if out["acked"] == opts.messages and out["errors"] == 0 else 1)


if __name__ == "__main__":
    main()
