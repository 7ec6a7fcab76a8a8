"""Opening paths beneath the workspace's roots at the point of use: the sandbox's last word.

A check of a path's name made before the file is opened (``agentloop_policies.Sandbox``, or
``os.path.realpath`` and a comparison) can be raced: a file or a directory swapped for a
symbolic link between the check and the ``open`` leads the open outside. So every file tool
opens what it uses through ``Beneath``, which walks the path itself, one component at a time,
from a descriptor of the root:

* each directory is opened relative to its parent's descriptor with ``O_NOFOLLOW`` (and
  ``O_DIRECTORY``), so the kernel never follows a link the walk did not look at;
* a symbolic link met on the way is read (``readlinkat``) and its target walked the same way,
  so a link that stays beneath a root works, and one that leads out is refused, whenever it
  was made;
* ``..`` is taken from the walk's own stack of directories, never from the kernel;
* the last component is opened with ``O_NOFOLLOW | O_NONBLOCK`` after ``fstatat`` said it is
  a regular file, and checked again on the descriptor (``fstat``): a FIFO, a socket or a
  device is refused before it is opened, and one swapped in after the check cannot block the
  open;
* once the file is open, the directory holding it is checked again through
  ``/proc/self/fd`` (where the system has it): a directory moved out of the workspace in the
  middle of the walk is refused.

Writes go to a temporary file created beside the target (``O_CREAT | O_EXCL | O_NOFOLLOW``),
then ``renameat`` over it: a write never follows a link, and never changes a file outside
through a hard link (the rename gives the name a new file; the other names keep the old one).

What this cannot know: a **hard link** inside a root to a file elsewhere is that same file, so
reading it reads the outside file's content (its other names are not knowable in general:
``st_nlink > 1`` says only that some exist). A bind mount inside a root is a directory inside.
The roots themselves, and the directories above them, are trusted.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ._errors import ToolInputError

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["Beneath", "Located", "Stamp", "regular_only"]

_O_PATH = getattr(os, "O_PATH", 0)
_DIRECTORY = (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LISTABLE = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_STEPS = 40  # symbolic links followed (and restarts) in one walk, as the kernel's ELOOP
_RETRIES = 8  # a file that keeps changing between the check and the open is given up on
_PROC_FD = Path("/proc/self/fd")
_CHANGING = (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.EEXIST)


class Located(NamedTuple):
    """Where a walk ended: the directory holding the target, and the target's name in it.

    ``name`` is empty when the target is that directory itself (a root, or a path ending in
    ``..``). ``dir_fd`` belongs to the walk (closed when its ``with`` block ends).
    """

    dir_fd: int
    name: str
    real: Path


class Stamp(NamedTuple):
    """A file's identity and version, to tell whether it changed since it was read."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Stamp:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def regular_only(st: os.stat_result, shown: str) -> None:
    """Refuse anything but a regular file (a directory, a FIFO, a socket, a device).

    Raises:
        ToolInputError: the file is not a regular file.
    """
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise ToolInputError(f"{shown} is a directory; use list_dir to see what it holds")
    kind = (
        "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )
    raise ToolInputError(f"{shown} is {kind}; only regular files are read or changed")


def _parts(text: str) -> list[str]:
    return [part for part in text.split("/") if part not in ("", ".")]


class Beneath:
    """Walks and opens paths so that nothing outside ``roots`` is ever opened (module docs).

    Args:
        roots: the directories, as real paths (no symbolic links); ``/`` allows everything.
    """

    __slots__ = ("roots",)

    def __init__(self, roots: Sequence[Path]) -> None:
        # The deepest root first: a path inside two nested roots is walked from the nearer.
        self.roots = tuple(sorted(roots, key=lambda r: len(r.parts), reverse=True))

    def outside(self, shown: str) -> ToolInputError:
        """The error for a path that leads outside the roots."""
        where = ", ".join(str(root) for root in self.roots)
        return ToolInputError(
            f"{shown!r} leads outside the allowed directories ({where}); use a path inside them"
        )

    def start(self, text: str, shown: str) -> tuple[Path, collections.deque[str]]:
        """The root an absolute path lies under and the components left to walk from it.

        The path's own spelling is tried first; then its ``realpath`` (for a path spelled
        through a link above the roots), whose remainder is walked again from the root.

        Raises:
            ToolInputError: the path is not under any root.
        """
        given = _parts(text)
        for root in self.roots:
            inner = root.parts[1:]
            if tuple(given[: len(inner)]) == inner:
                return root, collections.deque(given[len(inner) :])
        real = Path(os.path.realpath(text))
        for root in self.roots:
            if real.is_relative_to(root):
                return root, collections.deque(real.relative_to(root).parts)
        raise self.outside(shown)

    @contextlib.contextmanager
    def locate(
        self, path: Path, shown: str, *, follow: bool = True, make_dirs: bool = False
    ) -> Iterator[Located]:
        """Walk ``path`` (absolute) beneath the roots; see the module docs.

        Args:
            path: the absolute path to walk.
            shown: the path as the model gave it, for errors.
            follow: follow a symbolic link in the last component too.
            make_dirs: create missing directories on the way (for a new file).

        Raises:
            ToolInputError: the path leads outside the roots, or through too many links.
            OSError: a directory on the way is missing or cannot be opened.
        """
        fds: list[int] = []
        try:
            yield self._walk(path, shown, follow, make_dirs, fds)
        finally:
            for fd in fds:
                os.close(fd)

    def _walk(
        self, path: Path, shown: str, follow: bool, make_dirs: bool, fds: list[int]
    ) -> Located:
        steps = _MAX_STEPS
        root, pending = self.start(str(path), shown)
        fds.append(os.open(root, _DIRECTORY))
        stack: list[tuple[int, Path]] = [(fds[-1], root)]

        def restart(text: str) -> None:
            nonlocal root, pending, stack
            new_root, new_pending = self.start(text, shown)
            for fd, _ in stack[1:]:
                os.close(fd)
                fds.remove(fd)
            if new_root != root:
                fds.append(os.open(new_root, _DIRECTORY))
            else:
                fds.append(os.dup(stack[0][0]))
            root, pending, stack = new_root, new_pending, [(fds[-1], new_root)]

        while pending:
            part = pending.popleft()
            top_fd, top_real = stack[-1]
            if part == "..":
                if len(stack) > 1:
                    fds.remove(stack[-1][0])
                    os.close(stack.pop()[0])
                elif top_real.parent != top_real:  # above a root: walk again from there
                    steps -= 1
                    if steps < 0:
                        raise ToolInputError(f"{shown}: too many levels of symbolic links")
                    restart("/".join((str(top_real.parent), *pending)))
                continue
            last = not pending
            try:
                st = os.stat(part, dir_fd=top_fd, follow_symlinks=False)
            except FileNotFoundError:
                if last:
                    return Located(top_fd, part, top_real / part)
                if not make_dirs:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=top_fd)
                pending.appendleft(part)
                continue
            if stat.S_ISLNK(st.st_mode) and (follow or not last):
                steps -= 1
                if steps < 0:
                    raise ToolInputError(f"{shown}: too many levels of symbolic links")
                target = os.readlink(part, dir_fd=top_fd)
                if target.startswith("/"):
                    restart("/".join((target, *pending)))
                else:
                    pending.extendleft(reversed(_parts(target)))
                continue
            if last:
                return Located(top_fd, part, top_real / part)
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), part)
            try:
                fd = os.open(part, _DIRECTORY, dir_fd=top_fd)
            except OSError as exc:
                if exc.errno not in _CHANGING:
                    raise
                steps -= 1  # it changed since it was looked at (a swap): look again
                if steps < 0:
                    raise ToolInputError(f"{shown} keeps changing; try again") from None
                pending.appendleft(part)
                continue
            fds.append(fd)
            stack.append((fd, top_real / part))
        return Located(stack[-1][0], "", stack[-1][1])

    def verify(self, dir_fd: int, shown: str) -> None:
        """Check that an open directory still lies beneath a root (it may have been moved out
        while it was walked). Where ``/proc/self/fd`` is missing, nothing is checked.

        Raises:
            ToolInputError: the directory is now outside the roots.
        """
        try:
            where = Path(os.readlink(_PROC_FD / str(dir_fd)))
        except OSError:
            return
        if not any(where.is_relative_to(root) for root in self.roots):
            raise self.outside(shown)

    # ---------------------------------------------------------------- operations

    def open_regular(self, path: Path, shown: str) -> tuple[int, os.stat_result, Path]:
        """Open the regular file ``path`` for reading, without blocking; the caller owns the
        descriptor. Returns it, its status, and its real path.

        Raises:
            ToolInputError: missing, not a regular file, outside the roots, or it keeps
                changing between the check and the open.
            OSError: it cannot be opened (permissions, ...).
        """
        for _ in range(_RETRIES):
            with self.locate(path, shown) as at:
                if not at.name:
                    raise ToolInputError(
                        f"{shown} is a directory; use list_dir to see what it holds"
                    )
                try:
                    st = os.stat(at.name, dir_fd=at.dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    raise ToolInputError(
                        f"{shown} does not exist; check the name with list_dir or glob"
                    ) from None
                if stat.S_ISLNK(st.st_mode):
                    continue  # made a link after the walk: walk again
                regular_only(st, shown)  # refused before it is opened
                try:
                    fd = os.open(at.name, _READ, dir_fd=at.dir_fd)
                except OSError as exc:
                    if exc.errno in _CHANGING:
                        continue
                    raise
                try:
                    st = os.fstat(fd)
                    regular_only(st, shown)
                    self.verify(at.dir_fd, shown)
                except BaseException:
                    os.close(fd)
                    raise
                return fd, st, at.real
        raise ToolInputError(f"{shown} keeps changing while it is opened; try again")

    def read(self, path: Path, shown: str, *, limit: int) -> tuple[bytes, Stamp]:
        """The bytes of the regular file ``path`` and its stamp, refused past ``limit`` bytes.

        Raises:
            ToolInputError: as ``open_regular``, or the file is too large.
            OSError: it cannot be read.
        """
        fd, st, _ = self.open_regular(path, shown)
        with open(fd, "rb", closefd=True) as file:
            if st.st_size > limit:
                raise ToolInputError(
                    f"{shown} is {st.st_size:,} bytes, more than the {limit:,} this tool handles"
                )
            data = file.read(limit + 1)
        if len(data) > limit:
            raise ToolInputError(f"{shown} is more than the {limit:,} bytes this tool handles")
        return data, Stamp.of(st)

    def stamp(self, at: Located, shown: str) -> tuple[Stamp | None, int | None]:
        """The stamp and permission bits of the file ``at`` names (``None``: it does not
        exist), which must be a regular file to be replaced.

        Raises:
            ToolInputError: it is a directory or not a regular file.
        """
        if not at.name:
            raise ToolInputError(f"{shown} is a directory; give a file name")
        try:
            st = os.stat(at.name, dir_fd=at.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None, None
        if stat.S_ISDIR(st.st_mode):
            raise ToolInputError(f"{shown} is a directory; give a file name")
        if stat.S_ISLNK(st.st_mode):
            raise ToolInputError(f"{shown} changed while it was written; try again")
        regular_only(st, shown)
        return Stamp.of(st), stat.S_IMODE(st.st_mode)

    def write(self, path: Path, shown: str, data: bytes, *, base: Stamp | None = None) -> bool:
        """Replace (or create) the file ``path`` with ``data`` all at once, keeping an
        existing file's permission bits. Returns whether the file was created.

        ``base`` is the stamp of the version the new content was made from: if the file is
        no longer that version (something else wrote it), nothing is written.

        Raises:
            ToolInputError: outside the roots, not a regular file, or changed since ``base``.
            OSError: it cannot be written.
        """
        with self.locate(path, shown, make_dirs=True) as at:
            current, mode = self.stamp(at, shown)
            if base is not None and current != base:
                raise ToolInputError(
                    f"{shown} changed since it was read (another program wrote it); nothing "
                    "was written: read it again and redo the change"
                )
            stem = at.name[:200]
            temp = f".{stem}.{secrets.token_hex(6)}.tmp"
            fd = os.open(temp, _CREATE, 0o666 if mode is None else 0o600, dir_fd=at.dir_fd)
            try:
                with open(fd, "wb", closefd=True) as file:
                    file.write(data)
                    file.flush()
                    if mode is not None:
                        os.fchmod(file.fileno(), mode)
                    os.fsync(file.fileno())
                self.verify(at.dir_fd, shown)
                os.replace(temp, at.name, src_dir_fd=at.dir_fd, dst_dir_fd=at.dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=at.dir_fd)
                raise
            return current is None

    def list_dir(self, path: Path, shown: str) -> list[os.DirEntry[str]]:
        """The entries of the directory ``path`` (links not followed).

        Raises:
            ToolInputError: outside the roots, missing, or not a directory.
            OSError: it cannot be read.
        """
        with self.locate(path, shown) as at:
            try:
                fd = os.open(at.name or ".", _LISTABLE, dir_fd=at.dir_fd)
            except FileNotFoundError:
                raise ToolInputError(f"{shown} does not exist") from None
            except NotADirectoryError:
                raise ToolInputError(f"{shown} is a file, not a directory; use read_file") from None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise ToolInputError(
                        f"{shown} changed while it was opened; try again"
                    ) from None
                raise
            try:
                self.verify(fd, shown)
                with os.scandir(fd) as entries:
                    return list(entries)
            finally:
                os.close(fd)

    def is_dir(self, path: Path, shown: str) -> bool:
        """Whether ``path`` is a directory (links beneath the roots followed).

        Raises:
            ToolInputError: the path leads outside the roots, or does not exist.
            OSError: it cannot be looked at.
        """
        with self.locate(path, shown) as at:
            if not at.name:
                return True
            try:
                st = os.stat(at.name, dir_fd=at.dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                raise ToolInputError(f"{shown} does not exist") from None
            return stat.S_ISDIR(st.st_mode)

    def open_dir(self, path: Path, shown: str) -> tuple[int, Path]:
        """A readable descriptor of the directory ``path`` (the caller owns it), and its real
        path.

        Raises:
            ToolInputError: outside the roots, missing, or not a directory.
            OSError: it cannot be opened.
        """
        with self.locate(path, shown) as at:
            try:
                fd = os.open(at.name or ".", _LISTABLE, dir_fd=at.dir_fd)
            except FileNotFoundError:
                raise ToolInputError(f"{shown} does not exist") from None
            except (NotADirectoryError, OSError) as exc:
                if isinstance(exc, NotADirectoryError) or exc.errno == errno.ELOOP:
                    raise ToolInputError(f"{shown} is not a directory") from None
                raise
            try:
                self.verify(fd, shown)
            except BaseException:
                os.close(fd)
                raise
            return fd, at.real
