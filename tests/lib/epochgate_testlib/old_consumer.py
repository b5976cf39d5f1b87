"""An old consumer for the leader-move tests: Debian's kafka-python 2.0.2
(python3-kafka, Fetch v4: no leader epochs, no KIP-951 hint) reading one
partition from the beginning in a thread of the test process, and the
safety verdict on what it read. Used on the mock cluster
(tests/scenario/test_old_client_consumer_move.py) and on a real one
(tests/realkafka/test_consumer_moves.py).
"""

import threading
import time

from . import harness


def kafka():
    """Debian's kafka-python, or a Skip naming the package."""
    try:
        import kafka as kp  # Debian python3-kafka, run by /usr/bin/python3
    except ImportError:
        raise harness.Skip("kafka-python not installed (apt-get install python3-kafka)")
    return kp


class Reader:
    """A kafka-python consumer of `topic` partition 0 from the beginning,
    polling in its own thread until stop() or `bound` seconds; keeps
    (offset, value) in arrival order. `fetch_max_wait_ms`: the mock cluster
    answers an empty Fetch only after MaxWait, so tests there keep it low."""

    def __init__(self, bootstrap, topic, bound, fetch_max_wait_ms=50):
        kp = kafka()
        self.version = kp.__version__
        self.got = []
        self.error = None
        self._stop = threading.Event()
        self._c = kp.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                   fetch_max_wait_ms=fetch_max_wait_ms, request_timeout_ms=10000,
                                   client_id="epochgate-old-consumer")
        tp = kp.TopicPartition(topic, 0)
        self._c.assign([tp])
        self._c.seek_to_beginning(tp)
        self._deadline = time.monotonic() + bound
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        try:
            while not self._stop.is_set() and time.monotonic() < self._deadline:
                for batch in self._c.poll(timeout_ms=20, max_records=500).values():
                    self.got.extend((m.offset, m.value.decode()) for m in batch)
        except Exception as e:  # the verdict reports it; the thread must not hide it
            self.error = e
        finally:
            self._c.close()

    def wait_for(self, count, timeout):
        """Waits until `count` records arrived (or the consumer failed)."""
        harness.wait_until(lambda: len(self.got) >= count or self.error, timeout, interval=0.05,
                           what="kafka-python consumer reading %d records" % count)

    def stop(self):
        self._stop.set()
        self._t.join(timeout=15)


def assert_read_exactly(tag, reader, stored):
    """The reader delivered every value of `stored` (the partition in offset
    order) once, in offset order, and failed nowhere."""
    assert reader.error is None, "%s: kafka-python consumer failed: %r" % (tag, reader.error)
    offsets = [o for o, _ in reader.got]
    values = [v for _, v in reader.got]
    seen = set(values)
    lost = [v for v in stored if v not in seen]
    assert not lost, "%s: %d records never delivered (first %s)" % (tag, len(lost), lost[:5])
    assert len(values) == len(seen), "%s: %d records delivered twice" % (tag, len(values) - len(seen))
    ooo = sum(1 for a, b in zip(offsets, offsets[1:]) if b <= a)
    assert ooo == 0, "%s: %d deliveries not above the offset before" % (tag, ooo)
    assert values == list(stored), "%s: delivered values differ from the partition" % tag
