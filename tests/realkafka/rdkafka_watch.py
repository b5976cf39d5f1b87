"""librdkafka consumers (python3-confluent-kafka run on the librdkafka its
LD_LIBRARY_PATH names) of partition 0 of one topic that keep polling, each
on its own thread, while test_unclean_divergence.py stages an unclean
leader election underneath them. The twin of DivergenceWatch.java: it
reports what each application saw and decides nothing.

    LD_LIBRARY_PATH=<librdkafka lib> /usr/bin/python3 rdkafka_watch.py --topic T \
        --consumers "NAME@BOOTSTRAP@RESET;..."
    stdin, one command a line, one JSON line answered on stdout each:
      report   every consumer's records [offset, value] and errors so far
      quit

RESET is auto.offset.reset: earliest, or error (the consumer gets an
_AUTO_OFFSET_RESET error event; the application then assigns the partition
again from its beginning, which is what earliest does by itself).
"""

import argparse
import json
import sys
import threading

import confluent_kafka as ck

MAX_EVENTS = 10000  # per consumer; the test writes a few dozen records


class Watcher(threading.Thread):
    def __init__(self, name, bootstrap, reset, topic):
        super().__init__(daemon=True)
        self.name, self.topic = name, topic
        self.records, self.errors = [], []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.consumer = ck.Consumer({
            "bootstrap.servers": bootstrap, "client.id": name, "group.id": name,
            "enable.auto.commit": False, "auto.offset.reset": reset,
            "fetch.wait.max.ms": 100, "reconnect.backoff.max.ms": 500})

    def add(self, to, event):
        with self.lock:
            if len(to) < MAX_EVENTS:
                to.append(event)

    def report(self):
        with self.lock:
            return {"records": list(self.records), "errors": list(self.errors)}

    def assign_from_beginning(self):
        self.consumer.assign([ck.TopicPartition(self.topic, 0, ck.OFFSET_BEGINNING)])

    def run(self):
        self.assign_from_beginning()
        while not self.stop.is_set():
            msg = self.consumer.poll(0.1)
            if msg is None:
                continue
            err = msg.error()
            if err is None:
                self.add(self.records, [msg.offset(), msg.value().decode()])
                continue
            self.add(self.errors, {"error": err.name(), "message": err.str()})
            if err.code() == ck.KafkaError._AUTO_OFFSET_RESET:
                self.assign_from_beginning()
        self.consumer.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--topic", required=True)
    ap.add_argument("--consumers", required=True)
    o = ap.parse_args()
    watchers = [Watcher(*spec.split("@"), o.topic) for spec in o.consumers.split(";")]
    for w in watchers:
        w.start()
    print(json.dumps({"ok": True, "ready": True, "librdkafka": ck.libversion()[0]}), flush=True)
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            break
        if command[0] == "report":
            reply = {"ok": True, "consumers": {w.name: w.report() for w in watchers}}
        else:
            reply = {"ok": False, "error": "unknown command %s" % command[0]}
        print(json.dumps(reply), flush=True)
    for w in watchers:
        w.stop.set()
    for w in watchers:
        w.join(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
