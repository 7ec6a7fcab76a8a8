"""Session stores in bad places: a read-only directory, a file that is not a database, rows and
logs another program wrote. Reads work where they can; everything else is a
``SessionStoreError`` naming the path, never a raw ``sqlite3`` error.

The read-only cases run in a child process that may not write the directory. Root ignores
permission bits, so as root the child runs without ``CAP_DAC_OVERRIDE`` (``setpriv``): it then
obeys them like any user.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
import textwrap
from typing import TYPE_CHECKING

import anyio
import pytest

from agentloop import Text, UserMessage
from agentloop.sessions import JsonlSessionStore, SessionStoreError, SqliteSessionStore

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

CHILD = textwrap.dedent(
    """
    import json, sys
    import anyio
    from agentloop import UserMessage
    from agentloop.sessions import JsonlSessionStore, SessionStoreError, SqliteSessionStore

    kind, place, backend, first = sys.argv[1:5]

    async def attempt(call):
        try:
            await call()
        except SessionStoreError as exc:
            return ["SessionStoreError", str(exc), exc.path]
        except Exception as exc:
            return [type(exc).__module__ + "." + type(exc).__name__, str(exc)]
        return "ok"

    async def main():
        store = SqliteSessionStore(place) if kind == "sqlite" else JsonlSessionStore(place)
        out = {}
        writes = {
            "append": lambda: store.append("a", [UserMessage.from_text("more")]),
            "create": lambda: store.create(session_id="b"),
        }
        if first == "write":  # a fresh store whose first act is a write
            out["append"] = await attempt(writes.pop("append"))
        out["load"] = [m.text for m in await store.load("a")]
        out["info"] = (await store.info("a")).message_count
        out["list"] = [s.id for s in await store.list_sessions()]
        for name, call in writes.items():
            out[name] = await attempt(call)
        if kind == "sqlite":
            await store.aclose()
        print(json.dumps(out))

    anyio.run(main, backend=backend)
    """
)


def _unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root needs setpriv (util-linux) to drop CAP_DAC_OVERRIDE")
    drop = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={drop}", f"--bounding-set={drop}", "--"]


async def _fill(kind: str, place: Path) -> None:
    store = SqliteSessionStore(place) if kind == "sqlite" else JsonlSessionStore(place)
    await store.create(session_id="a")
    await store.append("a", [UserMessage.from_text("hello")])
    if isinstance(store, SqliteSessionStore):
        await store.aclose()


def _freeze(directory: Path) -> None:
    for path in directory.iterdir():
        path.chmod(0o444)
    directory.chmod(0o555)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
@pytest.mark.parametrize("first", ["read", "write"])
async def test_a_read_only_place_reads_and_refuses_writes_typed(
    tmp_path: Path, anyio_backend: str, kind: str, first: str
) -> None:
    directory = tmp_path / "sessions"
    directory.mkdir()
    place = directory / "s.db" if kind == "sqlite" else directory
    await _fill(kind, place)
    _freeze(directory)
    command = [sys.executable, "-c", CHILD, kind, str(place), anyio_backend, first]
    try:
        with anyio.fail_after(120):
            done = await anyio.run_process([*_unprivileged(), *command], check=False)
    finally:
        directory.chmod(0o755)
    assert done.returncode == 0, done.stderr.decode()
    out = json.loads(done.stdout)
    assert out["load"] == ["hello"]
    assert out["info"] == 1
    assert out["list"] == ["a"]
    for write in ("append", "create"):
        assert out[write][0] == "SessionStoreError", out[write]
        assert str(place) in out[write][1]
        assert out[write][2].startswith(str(directory))


@pytest.mark.parametrize(
    "content", [b"hello world, not a database" * 10, b"\0" * 4096], ids=["text", "zeros"]
)
async def test_a_file_that_is_not_a_database_is_a_typed_error(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    async with SqliteSessionStore(path) as store:
        for call in (
            lambda: store.load("a"),
            lambda: store.list_sessions(),
            lambda: store.create(session_id="a"),
        ):
            with pytest.raises(SessionStoreError, match="not a SQLite database") as caught:
                await call()
            assert caught.value.path == str(path)
            assert str(path) in str(caught.value)
            assert isinstance(caught.value, OSError)  # code catching OSError still works
    assert path.read_bytes() == content  # nothing was written over it


async def test_a_directory_where_the_database_should_be_is_a_typed_error(tmp_path: Path) -> None:
    async with SqliteSessionStore(tmp_path) as store:
        with pytest.raises(SessionStoreError, match="cannot open it"):
            await store.list_sessions()


@pytest.mark.parametrize(
    ("stored", "count"),
    [("7", 7), ("seven", 0), (3.0, 3), (2.5, 0), (b"\x01", 0), (5, 5)],
)
async def test_message_count_is_an_int_whatever_the_row_holds(
    tmp_path: Path, stored: object, count: int
) -> None:
    path = tmp_path / "s.db"
    async with SqliteSessionStore(path) as store:
        await store.create(session_id="a")
        with sqlite3.connect(path) as conn:
            conn.execute(
                "UPDATE sessions SET message_count = ?, created_at = ? WHERE id = 'a'",
                (stored, "yesterday"),
            )
        for info in [await store.info("a"), *(await store.list_sessions())]:
            assert type(info.message_count) is int
            assert info.message_count == count
            assert type(info.created_at) is int


async def test_an_append_after_a_hostile_count_is_typed_or_stored(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteSessionStore(path) as store:
        await store.create(session_id="a")
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE sessions SET message_count = 'many', title = 5 WHERE id = 'a'")
        await store.append("a", [UserMessage.from_text("hi")])  # was a TypeError
        loaded = await store.load("a")
        assert [m.content for m in loaded if isinstance(m, UserMessage)] == [[Text(text="hi")]]
        assert (await store.info("a")).message_count == 1


async def test_jsonl_info_counts_what_load_returns(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path, fsync=False)
    await store.create(session_id="a")
    await store.append("a", [UserMessage.from_text("one")])
    log = tmp_path / "a.jsonl"
    message = log.read_bytes().strip()
    with log.open("ab") as f:
        f.write(b"\n")  # a blank line
        f.write(b'{"role": "user", "content": 5}\n')  # not a message
        f.write(b"garbage\n")
        f.write(message)  # a last message that lost only its newline
    loaded = await store.load("a")
    assert len(loaded) == 2
    assert (await store.info("a")).message_count == 2
    await store.append("a", [UserMessage.from_text("three")])  # gives the tail its newline
    assert len(await store.load("a")) == 3
    assert (await store.info("a")).message_count == 3
    assert [s.message_count for s in await store.list_sessions()] == [3]
