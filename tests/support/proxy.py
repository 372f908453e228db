"""A TCP proxy a test can partition: it stops forwarding while both sockets stay open, the way a
stateful firewall or a NAT that lost its state drops packets without a reset."""

import selectors
import socket
import threading


class PartitionableProxy:
    """Forwards 127.0.0.1:<port> to ``target``; ``partition()`` stops forwarding (nothing is
    read, nothing is closed), ``heal()`` resumes it."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._forwarding = threading.Event()
        self._forwarding.set()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def start(self) -> "PartitionableProxy":
        self._thread.start()
        return self

    def partition(self) -> None:
        self._forwarding.clear()

    def heal(self) -> None:
        self._forwarding.set()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(5)
        self._listener.close()

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ)
        peers: dict[socket.socket, socket.socket] = {}
        while not self._stopped.is_set():
            if not self._forwarding.is_set():
                self._forwarding.wait(0.05)  # partitioned: read nothing, keep every socket
                continue
            for key, _ in selector.select(0.05):
                sock = key.fileobj
                if sock is self._listener:
                    client, _address = self._listener.accept()
                    upstream = socket.create_connection(self.target)
                    peers[client], peers[upstream] = upstream, client
                    selector.register(client, selectors.EVENT_READ)
                    selector.register(upstream, selectors.EVENT_READ)
                    continue
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                other = peers.get(sock)
                if not data or other is None:
                    for end in (sock, other):
                        if end is not None and end in peers:
                            selector.unregister(end)
                            peers.pop(end, None)
                            end.close()
                    continue
                other.sendall(data)
        for sock in peers:
            sock.close()
