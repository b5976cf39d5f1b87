"""Recording TCP relay for integration tests.

Owns: a loopback listener that forwards every accepted connection to one
upstream address and records, per connection, every byte in each direction.
Tests put it between epochgate and a broker to see exactly what crossed.
It must never alter, delay on purpose or reorder bytes.
"""

import socket
import threading


class RelayedConnection:
    """Bytes seen on one relayed connection."""

    def __init__(self):
        self.lock = threading.Lock()
        self.to_upstream = bytearray()    # what the relay's client sent
        self.to_downstream = bytearray()  # what the upstream answered
        self.closed = False

    def snapshot(self):
        with self.lock:
            return bytes(self.to_upstream), bytes(self.to_downstream)


class TcpRelay:
    """Listens on 127.0.0.1:0 and relays to `upstream` (host, port)."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.connections = []
        self._sockets = [self.listener]
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def _accept_loop(self):
        while not self._stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            conn = RelayedConnection()
            with self._lock:
                self.connections.append(conn)
                self._sockets += [client, upstream]
            for src, dst, buf in ((client, upstream, conn.to_upstream),
                                  (upstream, client, conn.to_downstream)):
                threading.Thread(target=self._pump, args=(src, dst, buf, conn),
                                 daemon=True).start()

    @staticmethod
    def _pump(src, dst, buf, conn):
        try:
            while True:
                chunk = src.recv(1 << 16)
                if not chunk:
                    break
                with conn.lock:
                    buf += chunk
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            conn.closed = True
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def snapshots(self):
        """[(to_upstream, to_downstream)] for every connection so far."""
        with self._lock:
            conns = list(self.connections)
        return [c.snapshot() for c in conns]

    def close(self):
        self._stopped = True
        with self._lock:
            sockets = list(self._sockets)
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept()/recv()
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass
