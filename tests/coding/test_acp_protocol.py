"""``agentloop acp`` as a JSON-RPC server and an ACP agent, driven from outside: bad input
never ends it (issue 35 §10), its capabilities say what it does (§11, §12), prompts carry
images and context to the model or are refused with a reason (§11), and it offers commands
and model switching (§13). A session started and never prompted leaves nothing stored.

The protocol package runs on asyncio only, so these tests do too.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
from typing import TYPE_CHECKING, Any

import acp
import anyio
import pytest
from acp import text_block
from acp.schema import (
    AgentMessageChunk,
    AudioContentBlock,
    AvailableCommandsUpdate,
    CurrentModeUpdate,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextResourceContents,
)

import agentloop

from ._acp_client import Editor, connect, script
from ._cli_helpers import AGENTLOOP, Cli
from ._fake_openai import running_fake_openai

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


class Lines:
    """A process's standard output, a JSON line at a time."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.buffer = b""

    async def next(self) -> Any:
        while b"\n" not in self.buffer:
            self.buffer += await self.stream.receive()
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)


BAD = [  # a line, the error code of its answer, the id of its answer
    (b"[]", -32600, None),
    (b"123", -32600, None),
    (b'"a string"', -32600, None),
    (b"null", -32600, None),
    (b"true", -32600, None),
    (b"{not json", -32700, None),
    (b"\xff\xfe garbage", -32700, None),
    (b"[" * 100_000, -32700, None),  # nested too deeply for any parser
    (b'{"jsonrpc": "2.0"}', -32600, None),  # neither a request nor a response
    (b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "initialize"}', -32600, None),
    (b'{"jsonrpc": "1.0", "id": 3, "method": "initialize"}', -32600, 3),
    (b'{"jsonrpc": "2.0", "id": 4, "method": 12}', -32600, 4),
    (b'{"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": 7}', -32600, 5),
    (b'{"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": []}', -32602, 6),
    (b'{"jsonrpc": "2.0", "id": 8, "method": "no/such"}', -32601, 8),
]


async def test_bad_input_is_answered_and_never_ends_the_server(cli: Cli) -> None:
    env = {**cli.env, "AGENTLOOP_MODEL": script(cli, [])}
    process = await anyio.open_process(
        [AGENTLOOP, "acp"], cwd=cli.workspace, env=env, stderr=subprocess.DEVNULL
    )
    async with process:
        assert process.stdin is not None and process.stdout is not None
        lines = Lines(process.stdout)
        with anyio.fail_after(60):
            for raw, code, request_id in BAD:
                await process.stdin.send(raw + b"\n")
                answer = await lines.next()
                assert (answer["id"], answer["error"]["code"]) == (request_id, code), raw[:40]
            # A batch: each request in it refused (ACP has none), notifications not answered.
            batch = [
                {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}},
                {"jsonrpc": "2.0", "method": "session/cancel", "params": {}},
                5,
            ]
            await process.stdin.send(json.dumps(batch).encode() + b"\n")
            answers = await lines.next()
            assert [(a["id"], a["error"]["code"]) for a in answers] == [(7, -32600), (None, -32600)]
            # Still serving.
            hello = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": 1},
            }
            await process.stdin.send(json.dumps(hello).encode() + b"\n")
            answer = await lines.next()
            assert answer["id"] == 1 and answer["result"]["agentInfo"]["name"] == "agentloop"
            await process.stdin.aclose()
            assert await process.wait() == 0


async def test_the_transport_bounds_a_line_and_keeps_serving() -> None:
    from agentloop_coding._acp_transport import StdioTransport

    read_end, write_end = os.pipe()
    answers_read, answers_write = os.pipe()
    transport = StdioTransport(read_end, answers_write, max_line=1000)
    try:
        os.write(write_end, b'{"jsonrpc": "2.0", "id": "' + b"x" * 5000 + b'"}\n')
        os.write(write_end, b'{"jsonrpc": "2.0", "id": 2, "method": "ok"}\n')
        with anyio.fail_after(10):
            message = await transport.receive()
        assert message == {"jsonrpc": "2.0", "id": 2, "method": "ok"}
        refused = json.loads(os.read(answers_read, 10_000))
        assert refused["error"]["code"] == -32600 and "too long" in refused["error"]["data"]
        os.close(write_end)
        write_end = -1
        assert await transport.receive() is None  # the end of input
    finally:
        await transport.close()
        for fd in (read_end, write_end, answers_read, answers_write):
            if fd >= 0:
                os.close(fd)


async def test_capabilities_say_what_the_agent_does(cli: Cli) -> None:
    async with anyio.create_task_group() as tg:
        editor = Editor(tg)
        with anyio.fail_after(60):
            async with connect(cli, editor, model=script(cli, [])) as (_, _, init):
                pass
            async with connect(cli, editor, model="ollama_openai:llama3.2") as (_, _, text_only):
                pass
        tg.cancel_scope.cancel()
    assert init.agent_info.version == agentloop.__version__
    assert init.agent_info.version == importlib.metadata.version("anyio-agentloop")
    prompts = init.agent_capabilities.prompt_capabilities
    assert (prompts.image, prompts.audio, prompts.embedded_context) == (True, False, True)
    assert text_only.agent_capabilities.prompt_capabilities.image is False


async def test_images_and_context_reach_the_model_and_audio_is_refused(cli: Cli) -> None:
    resource = EmbeddedResourceContentBlock(
        type="resource",
        resource=TextResourceContents(uri="file:///notes.md", text="remember the milk"),
    )
    answers = [{"text": "A dot."}, {"text": "Noted."}, {"text": "I will read it."}]
    with running_fake_openai(answers) as model:
        env = {"OPENAI_API_KEY": "sk-loopback", "OPENAI_BASE_URL": model.base_url}
        async with anyio.create_task_group() as tg:
            editor = Editor(tg)
            with anyio.fail_after(60):
                async with connect(cli, editor, model="openai:gpt-4.1", env=env) as (conn, _, _):
                    sid = (await conn.new_session(cwd=str(cli.workspace))).session_id
                    image = ImageContentBlock(type="image", data=PNG, mime_type="image/png")
                    # An image-only prompt: the model gets the image (it used to get nothing).
                    done = await conn.prompt(session_id=sid, prompt=[image])
                    assert done.stop_reason == "end_turn"
                    with_context = [text_block("What does it say?"), resource]
                    assert (await conn.prompt(session_id=sid, prompt=with_context)).stop_reason
                    audio = AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav")
                    with pytest.raises(acp.RequestError) as refused:
                        await conn.prompt(session_id=sid, prompt=[text_block("hi"), audio])
                    assert "audio is not supported" in str(refused.value.data)
                    link = ResourceContentBlock(
                        type="resource_link", name="a.py", uri="file:///a.py"
                    )
                    assert (await conn.prompt(session_id=sid, prompt=[link])).stop_reason
            tg.cancel_scope.cancel()
    first = model.requests[0]["messages"][-1]["content"]
    assert first == [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]
    second = json.dumps(model.requests[1]["messages"][-1]["content"])
    assert '<file uri=\\"file:///notes.md\\">\\nremember the milk\\n</file>' in second
    assert "[a.py](file:///a.py)" in json.dumps(model.requests[2]["messages"][-1]["content"])
    assert len(model.requests) == 3  # the refused prompt never reached the model


async def test_a_model_without_images_refuses_them_with_a_reason(cli: Cli) -> None:
    config = cli.home / "config" / "agentloop"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("images = false\n")
    async with anyio.create_task_group() as tg:
        editor = Editor(tg)
        with anyio.fail_after(60):
            async with connect(cli, editor, model=script(cli, [])) as (conn, _, init):
                assert init.agent_capabilities.prompt_capabilities.image is False
                sid = (await conn.new_session(cwd=str(cli.workspace))).session_id
                image = ImageContentBlock(type="image", data=PNG, mime_type="image/png")
                with pytest.raises(acp.RequestError) as refused:
                    await conn.prompt(session_id=sid, prompt=[image])
        tg.cancel_scope.cancel()
    assert "does not take images" in str(refused.value.data)


async def test_commands_and_model_switching(cli: Cli) -> None:
    first = script(cli, [{"text": "from the first"}], "first.json")
    second = script(cli, [{"text": "1. Do it"}, {"text": "Done it."}], "second.json")
    config = cli.home / "config" / "agentloop"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(f"models = [{json.dumps(second)}]\n")
    async with anyio.create_task_group() as tg:
        editor = Editor(tg)
        editor.watch = lambda u: isinstance(u, AvailableCommandsUpdate)
        with anyio.fail_after(60):
            async with connect(cli, editor, model=first) as (conn, _, _):
                new = await conn.new_session(cwd=str(cli.workspace))
                (option,) = new.config_options
                assert option.id == "model" and option.category == "model"
                assert option.current_value == first
                assert [o.value for o in option.options] == [first, second]
                await editor.seen.wait()
                commands = [
                    c
                    for u in editor.updates
                    if isinstance(u, AvailableCommandsUpdate)
                    for c in u.available_commands
                ]
                assert [c.name for c in commands] == ["plan", "execute", "model", "approval"]
                sid = new.session_id
                assert (await conn.prompt(session_id=sid, prompt=[text_block("hi")])).stop_reason
                switched = await conn.set_config_option(
                    config_id="model", session_id=sid, value=second
                )
                assert switched.config_options[0].current_value == second
                with pytest.raises(acp.RequestError):
                    await conn.set_config_option(config_id="model", session_id=sid, value="x:y")
                editor.take()
                plan = await conn.prompt(session_id=sid, prompt=[text_block("/plan the work")])
                assert plan.stop_reason == "end_turn"
                updates = editor.take()
                assert any(
                    isinstance(u, CurrentModeUpdate) and u.current_mode_id == "plan"
                    for u in updates
                )
                done = await conn.prompt(session_id=sid, prompt=[text_block("/execute")])
                assert done.stop_reason == "end_turn"
                told = "".join(
                    u.content.text for u in editor.take() if isinstance(u, AgentMessageChunk)
                )
                assert told == "Done it."
                await conn.prompt(session_id=sid, prompt=[text_block("/approval bypassed")])
                told = "".join(
                    u.content.text for u in editor.take() if isinstance(u, AgentMessageChunk)
                )
                assert told == "Approval: bypassed"
        tg.cancel_scope.cancel()


async def test_a_session_that_never_gets_a_prompt_stores_nothing(cli: Cli) -> None:
    async with anyio.create_task_group() as tg:
        editor = Editor(tg)
        with anyio.fail_after(60):
            async with connect(cli, editor, model=script(cli, [{"text": "ok"}])) as (conn, _, _):
                await conn.new_session(cwd=str(cli.workspace))
                prompted = await conn.new_session(cwd=str(cli.workspace))
                await conn.prompt(session_id=prompted.session_id, prompt=[text_block("hi")])
        tg.cancel_scope.cancel()
    stored = sorted(p.name for p in cli.sessions_dir.glob("*.jsonl"))
    assert stored == [f"{prompted.session_id}.jsonl"]
