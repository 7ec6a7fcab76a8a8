"""Running a command in a process group of its own: a deadline, an output cap, no orphans.

The command starts a new session (``start_new_session=True``), so it leads a process group
holding everything it spawns, grandchildren included. Whatever way the call ends, the whole
group is killed with ``SIGKILL`` before this returns or raises:

* the command finished: what it left running in the background is killed (it would hold the
  output pipe open, and outlive the tool call);
* the deadline passed: the group is killed and the output so far is returned;
* the call was cancelled (abort, steering, a tool timeout): the group is killed at once,
  synchronously, before any other ``await``, so even a cancellation the event loop delivers
  abruptly leaves no process behind.

A process that leaves the group on purpose (``setsid``, a double fork into a new session) is
beyond this reach; only an OS-level container (cgroups) can follow those.

Output is stdout and stderr combined, capped at ``max_output`` bytes: the first half and the
last half are kept, the middle is counted and dropped, so memory stays bounded whatever the
command prints.
"""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import msgspec

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = ["CappedOutput", "ProcessOutcome", "kill_group", "run_process"]

# How long the output pipe may stay open once the command itself exited (a process that left
# the group can hold it); past this the output is cut.
_PIPE_GRACE = 2.0
_REAP_TIMEOUT = 5.0


class ProcessOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """How a command ended.

    Attributes:
        output: stdout and stderr combined, decoded as UTF-8 (bad bytes replaced), capped.
        exit_code: the command's exit status; negative for a signal; ``None`` if it was
            killed at the deadline.
        timed_out: the deadline passed and the process group was killed.
        omitted_bytes: how many bytes of output the cap dropped (from the middle).
        pid: the process id, which is also the process group id.
    """

    output: str
    exit_code: int | None
    timed_out: bool = False
    omitted_bytes: int = 0
    pid: int = 0


class CappedOutput:
    """Keeps the first and the last ``cap // 2`` bytes of a stream, counting what it drops."""

    __slots__ = ("_head", "_tail", "cap", "omitted")

    def __init__(self, cap: int) -> None:
        if cap < 2:
            raise ValueError(f"the output cap must be at least 2 bytes, not {cap}")
        self.cap = cap
        self._head = bytearray()
        self._tail = bytearray()
        self.omitted = 0

    def add(self, data: bytes) -> None:
        half = self.cap // 2
        room = half - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail += data
        excess = len(self._tail) - (self.cap - half)
        if excess > 0:
            del self._tail[:excess]
            self.omitted += excess

    def text(self) -> str:
        head = self._head.decode("utf-8", "replace")
        tail = self._tail.decode("utf-8", "replace")
        if self.omitted:
            return f"{head}\n[... {self.omitted} bytes of output omitted ...]\n{tail}"
        return head + tail


def kill_group(pgid: int) -> None:
    """``SIGKILL`` every process of the group ``pgid`` (none left is fine)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is empty (or, after a PID reuse, not ours): nothing of ours is left


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    time_limit: float,
    max_output: int,
    on_output: Callable[[str], object] | None = None,
    pass_fds: Sequence[int] = (),
) -> ProcessOutcome:
    """Run ``argv`` in a new process group; see the module docs.

    Args:
        argv: the program and its arguments.
        cwd: the working directory.
        env: the whole environment of the process (nothing else is inherited).
        time_limit: seconds before the group is killed.
        max_output: the output cap in bytes.
        on_output: called with each piece of output as it arrives (decoded text).
        pass_fds: descriptors the process inherits (beside its standard streams).

    Raises:
        OSError: the program could not be started (not found, not executable).
    """
    buffer = CappedOutput(max_output)
    await anyio.lowlevel.checkpoint_if_cancelled()
    # Shielded: a cancellation (an abort, steering) arriving while the process is being made
    # would lose the process object and leave the process running. It is raised just below,
    # once the ``finally`` that kills the group owns the process.
    with anyio.CancelScope(shield=True):
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            pass_fds=pass_fds,
        )
    pid = process.pid
    drained = anyio.Event()
    decoder = codecs.getincrementaldecoder("utf-8")("replace")

    async def read() -> None:
        stream = process.stdout
        assert stream is not None
        try:
            async for chunk in stream:
                buffer.add(chunk)
                if on_output is not None:
                    text = decoder.decode(chunk)
                    if text:
                        on_output(text)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            drained.set()

    exit_code: int | None = None
    try:
        await anyio.lowlevel.checkpoint_if_cancelled()
        with anyio.move_on_after(time_limit) as deadline:
            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                exit_code = await process.wait()
                # What the command left running would keep the pipe open and outlive the call.
                kill_group(pid)
                with anyio.move_on_after(_PIPE_GRACE):
                    await drained.wait()
                tg.cancel_scope.cancel()
    finally:
        # First thing, with no await before it: even an abrupt cancellation gets here.
        kill_group(pid)
        with anyio.CancelScope(shield=True), anyio.move_on_after(_REAP_TIMEOUT):
            await process.aclose()
    return ProcessOutcome(
        output=buffer.text(),
        exit_code=exit_code,
        timed_out=deadline.cancelled_caught and exit_code is None,
        omitted_bytes=buffer.omitted,
        pid=pid,
    )
