"""The listening half the faults tests' scripted brokers share: a socket on
127.0.0.1 (never another address), the connections it accepted, and a
close() that ends them all, so a test's broker never outlives the test."""

import socket
import threading


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
