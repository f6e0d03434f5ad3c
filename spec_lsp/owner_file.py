"""The files spec-lsp writes that hold what was typed: a recorded session (`spec-lsp record
--out`) and the server's log (`spec-lsp serve --log-file`, which at DEBUG holds every document's
text). Only their owner may read them, and they are written where their path says, nowhere else.

So such a file is opened with `O_NOFOLLOW`: a symbolic link at its path (a workspace can ship
one named like the file a command writes) is refused, never followed to the file it names, which
would be truncated or appended to and made 0600. It must be a regular file (a FIFO there would
block the writer), is created 0600 whatever the umask, and an existing one is tightened to 0600.
`O_NOFOLLOW` guards the file's own name; the folders above it are the user's choice.

Standard library only; knows nothing of what is written.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO

PRIVATE = 0o600


class OwnerFileError(OSError):
    """The path is a symbolic link or not a regular file: nothing was opened or written."""


def open_owner_only(path: str | os.PathLike[str], append: bool = False) -> IO[str]:
    """`path` opened for writing text, truncated (or appended to with `append`), readable and
    writable by its owner only; raises OwnerFileError for a link or a non-regular file, OSError
    when it cannot be opened."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    flags |= os.O_APPEND if append else 0
    try:
        fd = os.open(path, flags, PRIVATE)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # a link; a FIFO nobody reads
            raise OwnerFileError(exc.errno, f"{path} is not a regular file: not written") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OwnerFileError(errno.EINVAL, f"{path} is not a regular file: not written")
        os.set_blocking(fd, True)
        os.fchmod(fd, PRIVATE)
        if not append:
            os.ftruncate(fd, 0)  # only now that it is known to be a regular file of ours
        return os.fdopen(fd, "a" if append else "w", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise
