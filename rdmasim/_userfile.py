"""Reading a file the user names (a scenario, a size CDF): only a regular file, and only up to a
size limit, so that ``/dev/zero``, a named pipe or a huge file is refused at once with a message
instead of filling memory (or waiting forever) while it is read."""

from __future__ import annotations

import os
import stat

from rdmasim.errors import UserInputError

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISSOCK, "a socket"))


def _mib(n: int) -> str:
    return f"{n:,} bytes" + (f" ({n / (1 << 20):.4g} MiB)" if n >= 1 << 20 else "")


def read_user_file(path: str | os.PathLike[str], what: str, limit_bytes: int) -> bytes:
    """The bytes of the regular file ``path`` (``what`` says what it is, for messages).

    Raises :class:`~rdmasim.errors.UserInputError` naming the file when it is not a regular file
    (a device, a named pipe, a directory) or holds more than ``limit_bytes`` (the size found and the
    limit), and ``OSError`` when it cannot be opened. A named pipe is refused without waiting
    for a writer; a file whose size the system does not report (``/proc``) is read up to the limit.
    """
    name = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(name, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a regular file")
            raise UserInputError(f"{name}: the {what} is {kind}, not a regular file")
        if st.st_size > limit_bytes:
            raise UserInputError(f"{name}: the {what} is {_mib(st.st_size)}; the limit is "
                                 f"{_mib(limit_bytes)}")
        chunks: list[bytes] = []
        left = limit_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit_bytes:  # it grew while read, or its size was not reported
        raise UserInputError(f"{name}: the {what} holds more than {_mib(limit_bytes)} (the limit)")
    return data
