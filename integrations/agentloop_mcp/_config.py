"""How to reach a server and how to treat it: ``StdioServer``, ``HttpServer``, ``RestartPolicy``.

Both specs are frozen msgspec Structs, tagged by ``transport``, so a list of them can be read
from a JSON or TOML file with ``msgspec.json.decode(data, type=list[ServerSpec])``.

The environment of a stdio server is an allow-list: the variables named in ``inherit_env`` are
copied from this process, ``env`` adds or overrides values, and nothing else is inherited except
the MCP SDK's own minimal set (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER`` on
POSIX), which holds no secrets. An API key in this process's environment never reaches a server
unless it is named.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias
from urllib.parse import urlsplit

import msgspec

from ._content import ResultLimits

__all__ = [
    "HttpServer",
    "LogLevel",
    "RestartPolicy",
    "ServerSpec",
    "StdioServer",
    "child_environment",
]

LogLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
"""An MCP log level (RFC 5424's severities), from the least to the most severe."""


class RestartPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """When to restart (or reconnect to) a server whose connection was lost.

    The n-th consecutive restart waits ``min(max_delay, initial_delay * factor**n)`` seconds.
    The count goes back to zero once a connection has stayed up ``reset_after`` seconds.

    Attributes:
        initial_delay: the wait before the first restart.
        max_delay: the cap on any wait.
        factor: how much each further wait grows.
        max_attempts: consecutive restarts before giving up (the toolset then fails every call
            at once until it is closed); ``None`` never gives up.
        reset_after: how long a connection must last for the count to start again.
    """

    initial_delay: float = 0.25
    max_delay: float = 30.0
    factor: float = 2.0
    max_attempts: int | None = None
    reset_after: float = 30.0

    def delay(self, attempt: int) -> float:
        """The wait before restart number ``attempt`` (counted from zero)."""
        return min(self.max_delay, self.initial_delay * self.factor ** min(attempt, 64))


class _Spec(msgspec.Struct, frozen=True, kw_only=True, tag_field="transport"):
    """What both transports share; see ``StdioServer`` for the fields."""

    name: str = ""
    prefix: str = ""
    include: Sequence[str] | None = None
    exclude: Sequence[str] = ()
    requires_approval: bool | Literal["unless_read_only"] = False
    trust_read_only_hints: bool = True
    connect_timeout: float = 30.0
    call_timeout: float | None = None
    request_timeout: float = 60.0
    restart: RestartPolicy | None = RestartPolicy()
    mode: Literal["auto", "legacy"] = "auto"
    limits: ResultLimits = ResultLimits()
    log_level: LogLevel | None = None
    resource_tool: bool = False


class StdioServer(_Spec, frozen=True, kw_only=True, tag="stdio"):
    """A server run as a subprocess, spoken to over its stdin and stdout.

    Attributes:
        command: the program to run.
        args: its arguments.
        env: environment variables to set in the server (added to the allow-list's values).
        inherit_env: names of variables copied from this process's environment.
        cwd: the server's working directory.
        stderr: where the server's stderr goes: a file object with a file descriptor, or a
            descriptor; ``None`` is this process's stderr.
        name: names the server in events, errors and results (default: the script's or the
            command's file name).
        prefix: put before every tool name the model sees (``"files_"``).
        include: the tools to offer, as names or shell-style globs of the server's names;
            ``None`` offers all.
        exclude: the tools never to offer (names or globs), applied after ``include``.
        requires_approval: ``True`` marks every tool as needing approval; ``"unless_read_only"``
            every tool the server does not annotate read-only.
        trust_read_only_hints: take the server's ``readOnlyHint``/``idempotentHint`` annotations
            as true. A read-only tool is offered in plan mode and, like an idempotent one, is
            retried once after a crash. They are hints from the server, not guarantees.
        connect_timeout: the bound on connecting (spawn, handshake, tool list), and on how long
            a call waits for a restarting server.
        call_timeout: the bound on one call (``None``: the loop's own limits only).
        request_timeout: the bound on any other request (a listing, a resource read, a prompt).
        restart: what to do when the connection is lost; ``None`` never restarts.
        mode: the MCP SDK's protocol negotiation: ``"auto"`` (newest both sides speak) or
            ``"legacy"`` (the ``initialize`` handshake).
        limits: bounds on what one result (tool result, resource, prompt) may bring into the
            history: text, blocks, images, binary data. What is cut is marked.
        log_level: the least severe server log message wanted (``logging/setLevel`` on
            connecting; on 2026-era connections, asked of every request); ``None`` leaves the
            server's default.
        resource_tool: also offer the model a ``read_resource`` tool (with the prefix) that
            reads this server's resources by URI.
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] = {}
    inherit_env: Sequence[str] = ()
    cwd: str | None = None
    stderr: Any = None


class HttpServer(_Spec, frozen=True, kw_only=True, tag="http"):
    """A server reached over MCP's streamable HTTP transport.

    The other fields are those of ``StdioServer``.

    Attributes:
        url: the MCP endpoint, e.g. ``"https://example.com/mcp"``.
        headers: sent with every request (``{"Authorization": "Bearer ..."}``).
        auth: an ``httpx2.Auth`` for schemes beyond a fixed header (OAuth, refreshing tokens).
        timeout: the connect, write and pool timeout of the HTTP client, in seconds.
        read_timeout: the read timeout; a server may hold a response stream open this long.
    """

    url: str
    headers: Mapping[str, str] = {}
    auth: Any = None
    timeout: float = 30.0
    read_timeout: float = 300.0


ServerSpec: TypeAlias = StdioServer | HttpServer
"""How to reach one MCP server: a program over stdio, or a URL."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def server_name(spec: ServerSpec) -> str:
    """The spec's ``name``, or one made from its command, script or host."""
    if spec.name:
        return spec.name
    if isinstance(spec, StdioServer):
        args = list(spec.args)
        if "-m" in args[:-1]:  # python -m package.module
            base = args[args.index("-m") + 1].rsplit(".", 1)[-1]
        else:
            scripts = [a for a in args if not a.startswith("-")]
            base = os.path.basename(scripts[-1] if scripts else spec.command)
            base = base.rsplit(".", 1)[0] or base
    else:
        base = urlsplit(spec.url).hostname or spec.url
    return _UNSAFE.sub("_", base) or "mcp"


def child_environment(spec: StdioServer) -> dict[str, str]:
    """The variables a stdio server gets on top of the SDK's minimal set."""
    env = {key: os.environ[key] for key in spec.inherit_env if key in os.environ}
    env.update(spec.env)
    return env
