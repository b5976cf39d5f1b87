"""The listening half the faults tests' scripted brokers share: a socket on
127.0.0.1 (never another address), the connections it accepted, and a
close() that ends them all, so a test's broker never outlives the test."""

import socket
import struct
import threading

from . import kafka_wire as kw


class LoopbackListener:
    """Base of a test broker: call _listen() in __init__, then start the
    accept thread; append each accepted socket to self._conns under
    self._lock."""

    def _listen(self, backlog):
        if not hasattr(self, "_lock"):
            self._lock = threading.Lock()
        self._conns = []
        self._closed = False
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(backlog)
        self.port = self.sock.getsockname()[1]
        self.bootstrap = "127.0.0.1:%d" % self.port

    @staticmethod
    def frames(conn):
        """Yields each size-prefixed request frame `conn` sends, until the
        peer closes; reads more only when asked for the next frame."""
        buf = b""
        while True:
            chunk = conn.recv(1 << 16)
            if not chunk:
                return
            buf += chunk
            frames, buf = kw.split_frames(buf)
            yield from frames

    @staticmethod
    def answer(conn, correlation_id, body):
        """Writes a response (header v0: the correlation id, then `body`)."""
        payload = struct.pack(">i", correlation_id) + body
        conn.sendall(struct.pack(">i", len(payload)) + payload)

    def close(self):
        """Stops accepting and shuts every accepted connection down."""
        self._closed = True
        with self._lock:
            conns = list(self._conns)
        for s in [self.sock] + conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
