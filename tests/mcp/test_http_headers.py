"""Headers and auth configured on an ``HttpServer`` reach the server on every request.

The test tools server runs over streamable HTTP with ``HEADERS_LOG`` set: an ASGI middleware
around the SDK's app appends each request's method and headers to a file before the request is
handled. Each test connects with headers and/or an ``httpx2.Auth`` configured as the docs show,
lists the tools and calls one, closes, and reads what arrived: the requests of its own
connection (the log's lines past where it stood when the test began).
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import httpx2
import pytest

import agentloop_mcp as mcp

from ._helpers import SDK_TRIO_SSE_WARNINGS, HttpServerProcess, call, http_spec, text

if TYPE_CHECKING:
    from collections.abc import Generator, Iterator
    from pathlib import Path

pytestmark = [pytest.mark.anyio, *SDK_TRIO_SSE_WARNINGS]

Mode: TypeAlias = Literal["auto", "legacy"]


class Recorded:
    """The test server's header log, read from where it stood when ``mark`` was called."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def mark(self) -> None:
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def requests(self) -> list[dict[str, Any]]:
        with self.path.open() as log:
            log.seek(self.offset)
            return [json.loads(line) for line in log]


@pytest.fixture(scope="module")
def recording_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[HttpServerProcess, Path]]:
    log = tmp_path_factory.mktemp("mcp-headers") / "headers.jsonl"
    with HttpServerProcess(env={"HEADERS_LOG": str(log)}) as server:
        yield server, log


@pytest.fixture
def server(recording_server: tuple[HttpServerProcess, Path]) -> tuple[str, Recorded]:
    process, log = recording_server
    recorded = Recorded(log)
    recorded.mark()
    return process.url, recorded


class NumberedTokens(httpx2.Auth):
    """A bearer token per request, numbered (like a token source that refreshes)."""

    def __init__(self) -> None:
        self.issued: list[str] = []

    def auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        token = f"token-{len(self.issued) + 1}"
        self.issued.append(token)
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])


async def list_and_call(spec: mcp.HttpServer) -> None:
    async with mcp.open_toolset(spec) as toolset:
        assert "add" in [t.name for t in toolset.get_tools()]
        assert text(await call(toolset, "add", a=2, b=3)) == "5"


def assert_a_whole_session(requests: list[dict[str, Any]], mode: str) -> None:
    """The requests are those of a session that listed the tools and called one."""
    if mode == "auto":
        # The stateless protocol (2026 and later): each POST names its method in a header.
        methods = [r["headers"].get("mcp-method") for r in requests]
        assert {"server/discover", "tools/list", "tools/call"} <= set(methods), methods
    else:
        # The handshake era: initialize, then requests in a session (a GET for the server's
        # stream among them), and a DELETE ending it when the toolset closes.
        methods = [r["method"] for r in requests]
        assert methods.count("POST") >= 3 and "GET" in methods, methods
        assert methods[-1] == "DELETE", methods


def sent(requests: list[dict[str, Any]], *names: str) -> list[dict[str, str | None]]:
    return [{name: r["headers"].get(name) for name in names} for r in requests]


@MODES
async def test_headers_are_sent_with_every_request(
    server: tuple[str, Recorded], mode: Mode
) -> None:
    url, recorded = server
    headers = {"Authorization": "Bearer s3cret-token", "X-Tenant": "acme"}
    await list_and_call(http_spec(url, headers=headers, mode=mode))
    requests = recorded.requests()
    assert_a_whole_session(requests, mode)
    expected = {"authorization": "Bearer s3cret-token", "x-tenant": "acme"}
    assert sent(requests, "authorization", "x-tenant") == [expected] * len(requests)


@MODES
async def test_an_httpx_auth_is_applied_to_every_request(
    server: tuple[str, Recorded], mode: Mode
) -> None:
    url, recorded = server
    auth = httpx2.BasicAuth("alice", "pa55word")
    await list_and_call(http_spec(url, headers={"X-Tenant": "acme"}, auth=auth, mode=mode))
    requests = recorded.requests()
    assert_a_whole_session(requests, mode)
    basic = "Basic " + base64.b64encode(b"alice:pa55word").decode()
    expected = {"authorization": basic, "x-tenant": "acme"}
    assert sent(requests, "authorization", "x-tenant") == [expected] * len(requests)


@MODES
async def test_an_auth_flow_runs_for_each_request(server: tuple[str, Recorded], mode: Mode) -> None:
    url, recorded = server
    auth = NumberedTokens()
    await list_and_call(http_spec(url, auth=auth, mode=mode))
    requests = recorded.requests()
    assert_a_whole_session(requests, mode)
    # Requests run concurrently (the server's stream beside the calls): compare as sets.
    tokens = {r["headers"].get("authorization") for r in requests}
    assert tokens == {f"Bearer {token}" for token in auth.issued}
    assert len(tokens) == len(requests)


@MODES
async def test_without_headers_none_are_sent(server: tuple[str, Recorded], mode: Mode) -> None:
    url, recorded = server
    await list_and_call(http_spec(url, mode=mode))
    requests = recorded.requests()
    assert_a_whole_session(requests, mode)
    assert sent(requests, "authorization", "x-tenant") == [
        {"authorization": None, "x-tenant": None}
    ] * len(requests)
