"""The base class of the built-in tools, and what they share: schema pieces, text decoding.

Each built-in tool is an ``agentloop.Tool`` (a JSON Schema, validated before ``execute``) bound
to a ``Workspace``. Beyond the ``AgentTool`` protocol it says what kind of action a call is
(``kind``: read, edit, search, execute — the categories editors show, ACP's tool kinds) and how
to name a call in one line (``title``), so an application can display calls without knowing
each tool. Bad input is never an exception out of ``execute``: ``ToolInputError`` and
``OSError`` become error results the model can act on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

import anyio

from agentloop import AgentToolResult, Tool

from ._errors import ToolInputError, describe_os_error

if TYPE_CHECKING:
    from agentloop.abc import OnUpdate

    from ._workspace import Workspace

__all__ = [
    "NOT_PATH",
    "CodingTool",
    "ToolKind",
    "decode_text",
    "looks_binary",
]

ToolKind: TypeAlias = Literal["read", "edit", "search", "execute", "other"]
"""What kind of action a coding tool's call is (ACP's tool kinds, which editors show)."""

NOT_PATH: dict[str, Any] = {"type": "string", "format": "not-path"}
"""A string parameter that is not a file name (the sandbox policy leaves it alone)."""

_SNIFF = 8192


def looks_binary(data: bytes) -> bool:
    """Whether ``data`` (the start of a file) is binary: it holds a NUL byte."""
    return b"\x00" in data[:_SNIFF]


def decode_text(data: bytes) -> str:
    """File bytes as text: UTF-8 (a leading BOM dropped), undecodable bytes replaced."""
    return data.decode("utf-8-sig", "replace")


class CodingTool(Tool):
    """A built-in tool working in a ``Workspace``; subclasses implement ``run``.

    Attributes:
        workspace: where the tool works.
        kind: what kind of action a call is (``read``, ``edit``, ``search``, ``execute``).
    """

    kind: ClassVar[ToolKind] = "other"

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def title(self, arguments: Any) -> str:
        """A one-line description of a call with ``arguments``, for displays."""
        path = arguments.get("path") if isinstance(arguments, dict) else None
        return f"{self.label or self.name} {path}" if isinstance(path, str) else self.name

    def shown(self, arguments: Any, key: str = "path") -> str:
        """The path argument ``key`` of a call as a display string (relative to the root)."""
        value = arguments.get(key) if isinstance(arguments, dict) else None
        if not isinstance(value, str):
            return "."
        try:
            return self.workspace.display(self.workspace.resolve(value))
        except ToolInputError:
            return value

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        """Run the call (``run``); a bad input or a file-system error becomes an error result."""
        try:
            return await self.run(arguments, on_update)
        except ToolInputError as exc:
            return AgentToolResult.error(str(exc))
        except OSError as exc:
            return AgentToolResult.error(describe_os_error(exc, str(exc.filename or self.name)))

    async def run(self, arguments: dict[str, Any], on_update: OnUpdate) -> AgentToolResult:
        """Do the tool's work with the validated ``arguments`` (a subclass implements it).

        Raises:
            ToolInputError: the arguments cannot be acted on (the model reads why).
            OSError: a file-system failure (the model reads a description of it).
            NotImplementedError: the subclass did not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement run()")

    @staticmethod
    async def in_thread(fn: Any, *args: Any) -> Any:
        """Run blocking file work in a worker thread; it stops at its next cancellation check.

        The thread is not abandoned on cancellation (a write must finish or not start): work
        that can take long calls ``anyio.from_thread.check_cancelled()`` as it goes. Files
        are opened without blocking (``_fs``), so no call waits on a FIFO or a device.
        """
        return await anyio.to_thread.run_sync(fn, *args)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} in {self.workspace.root}>"
