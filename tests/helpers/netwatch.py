"""Watches a network namespace's loopback for what a sealed session must never send: DNS queries, connections.

``python -m tests.helpers.netwatch LOG PORT``, run inside the namespace the session runs in
(``tests/test_web_sealed.py`` makes one with ``unshare``, whose ``/etc/resolv.conf`` names 127.0.0.1):
a stub resolver on 127.0.0.1:53 answers every query "no such name" at once (so a lookup costs
nothing) and a listener on 127.0.0.1:PORT accepts and closes; each query and connection is one JSON
line in LOG. It serves until killed; ``ready`` is the first line once both are listening.
"""

from __future__ import annotations

import json
import socket
import sys
import threading


def _note(log: str, lock: threading.Lock, record: dict[str, object]) -> None:
    with lock, open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def _question(packet: bytes) -> str:
    labels, at = [], 12
    while at < len(packet) and packet[at]:
        size = packet[at]
        labels.append(packet[at + 1 : at + 1 + size].decode("ascii", "replace"))
        at += 1 + size
    return ".".join(labels)


def _resolver(sock: socket.socket, log: str, lock: threading.Lock) -> None:
    while True:
        packet, peer = sock.recvfrom(4096)
        if len(packet) < 12:
            continue
        _note(log, lock, {"dns": _question(packet)})
        # the same id and question, flags: a response, recursion available, NXDOMAIN; no answers
        answer = packet[:2] + b"\x81\x83" + packet[4:6] + b"\x00\x00\x00\x00\x00\x00" + packet[12:]
        sock.sendto(answer, peer)


def _listener(sock: socket.socket, log: str, lock: threading.Lock) -> None:
    while True:
        connection, _ = sock.accept()
        _note(log, lock, {"connection": sock.getsockname()[1]})
        connection.close()


def main() -> None:
    log, port = sys.argv[1], int(sys.argv[2])
    lock = threading.Lock()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 53))
    tcp = socket.create_server(("127.0.0.1", port))
    threads = [
        threading.Thread(target=_resolver, args=(udp, log, lock), daemon=True),
        threading.Thread(target=_listener, args=(tcp, log, lock), daemon=True),
    ]
    for thread in threads:
        thread.start()
    _note(log, lock, {"ready": True})
    threading.Event().wait()


if __name__ == "__main__":
    main()
