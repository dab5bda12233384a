"""The bytes each TCP socket of a process has received and sent, for the stall clock: a rank that reads a plain
HTTP download into memory calls recv(), which the kernel's per-process I/O accounting (/proc/<pid>/io) does not
count, so without its sockets' counters such a rank reads as idle and the run as hung.

Read without privileges and without attaching: the process's socket inodes from its /proc/<pid>/fd links (a
process of the same user), and the kernel's TCP counters (tcp_info's bytes_received and bytes_acked, Linux 4.1
and later) of every TCP socket from one sock_diag netlink dump per address family, matched by inode; what `ss -ti`
reads. Where netlink is missing (not Linux) or refused, no socket is counted and the host is judged as before.
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Iterable, Iterator

_NETLINK_SOCK_DIAG = 4
"""linux/netlink.h; Python's socket module does not name it."""
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST_DUMP = 0x1 | 0x300
_NLMSG_DONE, _NLMSG_ERROR = 3, 2
_INET_DIAG_INFO = 2
_TIME_WAIT, _LISTEN = 6, 10
_STATES = 0xFFFFFFFF & ~(1 << _TIME_WAIT) & ~(1 << _LISTEN)
"""Every TCP state but those of sockets that carry no data: a closed connection's leftovers (a busy machine holds
thousands) and a listener."""
_HEADER = struct.Struct("=IHHII")
_REQUEST = struct.Struct("=BBBxI48x")
"""inet_diag_req_v2: family, protocol, the extensions asked (1 << (INET_DIAG_INFO - 1)), states, no socket id."""
_MESSAGE_INODE = struct.Struct("=I")
_INODE_AT = 68
"""inet_diag_msg: family, state, timer, retrans, its 48-byte id, expires, rqueue, wqueue, uid, then the inode."""
_MESSAGE_BYTES = 72
_ATTRIBUTE = struct.Struct("=HH")
_ACKED_AND_RECEIVED = struct.Struct("=QQ")
_ACKED_AT = 120
"""tcp_info's bytes_acked, then bytes_received: after 104 bytes of 8-bit and 32-bit fields and two 64-bit rates."""
_RECEIVE_BYTES = 1 << 20
_ANSWER_SECONDS = 1.0
"""How long a dump's next datagram is waited for: the stall clock's tick never waits on the kernel longer."""


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets the process holds open; none where its fds cannot be read (gone, another user)."""
    inodes = set()
    folder = f"/proc/{pid}/fd"
    try:
        names = os.listdir(folder)
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(f"{folder}/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def tcp_bytes_by_inode() -> dict[int, int]:
    """Every TCP socket's bytes received plus bytes sent and acknowledged, by inode; empty where netlink cannot be
    asked (not Linux, refused, a kernel older than 4.2)."""
    if not hasattr(socket, "AF_NETLINK"):
        return {}
    counted: dict[int, int] = {}
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_SOCK_DIAG) as link:
            link.settimeout(_ANSWER_SECONDS)
            for family in (socket.AF_INET, socket.AF_INET6):
                counted.update(_dump(link, family))
    except OSError:
        return {}
    return counted


def _dump(link: socket.socket, family: int) -> Iterator[tuple[int, int]]:
    body = _REQUEST.pack(family, socket.IPPROTO_TCP, 1 << (_INET_DIAG_INFO - 1), _STATES)
    link.send(_HEADER.pack(_HEADER.size + len(body), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST_DUMP, 1, 0) + body)
    while True:
        data = link.recv(_RECEIVE_BYTES)
        for kind, message in _messages(data):
            if kind in (_NLMSG_DONE, _NLMSG_ERROR):
                return
            if kind == _SOCK_DIAG_BY_FAMILY and len(message) >= _MESSAGE_BYTES:
                moved = _info_bytes(message)
                if moved is not None:
                    yield _MESSAGE_INODE.unpack_from(message, _INODE_AT)[0], moved


def _messages(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The netlink messages of one datagram: their type and body."""
    at = 0
    while at + _HEADER.size <= len(data):
        length, kind = _HEADER.unpack_from(data, at)[:2]
        if length < _HEADER.size:
            return
        yield kind, data[at + _HEADER.size:at + length]
        at += (length + 3) & ~3


def _info_bytes(message: bytes) -> int | None:
    """bytes_received + bytes_acked from the message's INET_DIAG_INFO attribute (tcp_info)."""
    at = _MESSAGE_BYTES
    while at + _ATTRIBUTE.size <= len(message):
        length, kind = _ATTRIBUTE.unpack_from(message, at)
        if length < _ATTRIBUTE.size:
            return None
        if kind == _INET_DIAG_INFO and length >= _ATTRIBUTE.size + _ACKED_AT + _ACKED_AND_RECEIVED.size:
            acked, received = _ACKED_AND_RECEIVED.unpack_from(message, at + _ATTRIBUTE.size + _ACKED_AT)
            return acked + received
        at += (length + 3) & ~3
    return None


def bytes_of(inodes: Iterable[int], counted: dict[int, int]) -> dict[int, int]:
    """The counters of the given sockets that are TCP sockets (a Unix socket or a pipe has none here)."""
    return {inode: counted[inode] for inode in inodes if inode in counted}
