"""A TCP forwarder on a loopback port that a test can take down and bring back: what a
client sees of a server that goes away (connections refused, open ones cut) and returns,
without stopping the shared server itself."""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

from tests.support.processes import free_port


class TcpProxy:
    """Forwards ``127.0.0.1:<port>`` to ``127.0.0.1:<target_port>`` while up.

    :meth:`down` closes the listening socket (new connections are refused) and cuts every
    open connection; :meth:`up` listens on the same port again. :meth:`close` stops it all
    (also on leaving a ``with`` block); its threads are daemons.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.accepted = 0
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self.up()

    def up(self) -> None:
        with self._lock:
            if self._listener is not None:
                return
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(64)
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            connections, self._open = self._open, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()

    def close(self) -> None:
        self.down()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # taken down
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # taken down meanwhile
                    client.close()
                    server.close()
                    return
                self._open.update((client, server))
                self.accepted += 1
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
