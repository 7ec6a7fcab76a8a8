"""No key the process knows reaches any surface, whoever's server echoes it (issue 34 §4).

Every provider's environment variable holds a distinctive value; one key is passed in code to a
provider that is never called, one comes from ``get_api_key`` (a keyring, say); and keys of
well-known shapes nobody configured (``sk-...``, ``sk-ant-...``, ``AKIA...``, a bearer token).
A real HTTP server on 127.0.0.1 answers every request with an error page echoing all of them
(a proxy's error page, a misrouted request), and another streams them as the model's answer.
Then every surface is searched: the ``agentloop`` command's ``--json`` and ``-v`` output and its
session files (as a subprocess), and in process the events, ``result.error``, the exception and
its traceback, the session file, a checkpoint, the log records, the OpenTelemetry spans, an
evaluation report (JSON, Markdown, JUnit) and its cassette.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import sys
import traceback
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import msgspec
import pytest

import agentloop as al
from agentloop.models import ResolvedModel, register_provider
from agentloop.sessions import JsonlSessionStore, SessionRecorder
from agentloop_providers.openai_chat import OpenAIChatProvider

from ._http import RequestReader

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

pytestmark = pytest.mark.anyio

# Every provider's key variable (the presets'), and the AWS credentials Bedrock signs with.
VARIABLES = sorted(
    {
        "AGENTLOOP_PROXY_TOKEN",
        "ANTHROPIC_API_KEY",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AZURE_OPENAI_API_KEY",
        "DEEPSEEK_API_KEY",
        "GEMINI_API_KEY",
        "GROQ_API_KEY",
        "LLAMACPP_API_KEY",
        "LLAMACPP_PYTHON_API_KEY",
        "LMSTUDIO_API_KEY",
        "MISTRAL_API_KEY",
        "OLLAMA_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "VLLM_API_KEY",
        "XAI_API_KEY",
    }
)
RUN = secrets.token_hex(4)
ENV = {name: f"leak{i:02d}q{RUN}{secrets.token_hex(6)}" for i, name in enumerate(VARIABLES)}
IN_CODE = f"leakcode{RUN}{secrets.token_hex(6)}"  # given to a provider that is never called
KEYRING = f"leakring{RUN}{secrets.token_hex(6)}"  # what get_api_key returns
SHAPES = [  # nobody configured these: their shape alone gives them away
    f"sk-ant-api03-{RUN}{secrets.token_hex(16)}",
    f"sk-proj-{RUN}{secrets.token_hex(16)}",
    "AKIA" + secrets.token_hex(8).upper(),
    f"eyJ{RUN}{secrets.token_hex(12)}",  # sent as "Bearer eyJ..."
]
SECRETS = [*ENV.values(), IN_CODE, KEYRING, *SHAPES]
ECHO = " ".join([*ENV.values(), IN_CODE, KEYRING, *SHAPES[:3], f"Bearer {SHAPES[3]}"])


def _find(texts: dict[str, str | bytes], among: list[str] = SECRETS) -> list[tuple[str, str]]:
    """(surface, secret) for every secret found on a surface."""
    found = []
    for surface, text in texts.items():
        data = text.encode() if isinstance(text, str) else text
        for secret in among:
            if secret.encode() in data:
                found.append((surface, secret[:12]))
    return found


def _files(root: Path) -> dict[str, str | bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


# --------------------------------------------------------------------------- the servers


def _error_page() -> bytes:
    body = json.dumps(
        {"error": {"message": f"upstream rejected the keys {ECHO}", "type": "invalid_request"}}
    ).encode()
    head = f"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    return head.encode() + body


def _echoed_answer() -> bytes:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": f"keys: {ECHO}"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return (head + body).encode()


async def _serve(listener: anyio.abc.Listener[anyio.abc.SocketStream], answer: bytes) -> None:
    async def handle(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            reader = RequestReader(stream)
            while await reader.next() is not None:
                await stream.send(answer)

    async with listener:
        await listener.serve(handle)


@pytest.fixture
async def servers() -> AsyncIterator[dict[str, str]]:
    """Base URLs of the error-page server and the echoing-answer server."""
    async with anyio.create_task_group() as tg:
        urls = {}
        for name, answer in (("error", _error_page()), ("answer", _echoed_answer())):
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
            port = listener.extra(anyio.abc.SocketAttribute.local_port)
            tg.start_soon(_serve, listener, answer)
            urls[name] = f"http://127.0.0.1:{port}/v1"
        yield urls
        tg.cancel_scope.cancel()


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    OpenAIChatProvider(api_key=IN_CODE)  # a key passed in code, never used on a call
    return ENV


# --------------------------------------------------------------------------- the command


@pytest.mark.parametrize("mode", ["--json", "-v"])
@pytest.mark.parametrize("server", ["error", "answer"])
async def test_the_command_writes_no_key_anywhere(
    servers: dict[str, str],
    environment: dict[str, str],
    tmp_path: Path,
    anyio_backend: str,
    mode: str,
    server: str,
) -> None:
    env = {
        **os.environ,
        **environment,
        "OPENAI_BASE_URL": servers[server],
        "AGENTLOOP_SESSIONS_DIR": str(tmp_path / "sessions"),
        "AGENTLOOP_CONFIG": str(tmp_path / "none.toml"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    command = [sys.executable, "-m", "agentloop_coding", "run", mode, "--backend", anyio_backend]
    command += ["-m", "openai:gpt-4o-mini", "--cwd", str(tmp_path), "say hello"]
    with anyio.fail_after(120):
        done = await anyio.run_process(command, env=env, check=False)
    surfaces: dict[str, str | bytes] = {"stdout": done.stdout, "stderr": done.stderr}
    surfaces.update(_files(tmp_path / "sessions"))
    # A session file was written, unless the run failed before any answer: a session is
    # stored only once it holds a real exchange (the echoing server's answer is one).
    assert len(surfaces) > 2 or server == "error", done.stderr
    if server == "error":
        assert b"upstream rejected the keys" in done.stdout + done.stderr
    else:
        assert b"keys: " in done.stdout + done.stderr
    # The command's process knows the environment's keys and the shapes; the keys passed in
    # code and from the keyring belong to the test's process (tested in process below).
    assert _find(surfaces, [*ENV.values(), *SHAPES]) == []


# --------------------------------------------------------------------------- in process


async def _keyring(provider: str) -> str:
    return KEYRING


def _agent(
    provider: OpenAIChatProvider, store: JsonlSessionStore, session: str, **kwargs: Any
) -> al.Agent[Any]:
    return al.Agent(
        model=al.ModelSpec(provider="openai", model_id="gpt-4o-mini"),
        stream_fn=provider,
        session=SessionRecorder(store, session),
        get_api_key=_keyring,
        retry_strategy=al.retry.NoRetry(),
        **kwargs,
    )


@pytest.mark.parametrize("server", ["error", "answer"])
async def test_no_surface_of_a_run_holds_a_key(
    servers: dict[str, str],
    environment: dict[str, str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    server: str,
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentloop_otel import OpenTelemetry

    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    store = JsonlSessionStore(tmp_path / "sessions", fsync=False)
    session = (await store.create()).id
    async with OpenAIChatProvider(base_url=servers[server]) as provider:
        agent = _agent(
            provider,
            store,
            session,
            instrumentation=OpenTelemetry(tracer_provider=tracing, capture_content=True),
        )
        events: list[bytes] = []
        agent.subscribe(lambda event: events.append(al.encode(event)))
        surfaces: dict[str, str | bytes] = {}
        with caplog.at_level(logging.DEBUG):
            try:
                result = await agent.prompt("say hello")
            except al.AgentError as exc:
                surfaces["exception"] = "".join(traceback.format_exception(exc))
            else:
                surfaces["result.error"] = result.error or ""
                surfaces["result"] = msgspec.json.encode(
                    msgspec.structs.asdict(result), enc_hook=repr
                )
    assert agent.messages, "the run committed nothing"
    surfaces["events"] = b"\n".join(events)
    surfaces["checkpoint"] = al.encode(agent.checkpoint())
    surfaces["last_error"] = agent.last_error or ""
    surfaces["logs"] = "\n".join(
        f"{r.getMessage()} {logging.Formatter().formatException(r.exc_info) if r.exc_info else ''}"
        for r in caplog.records
    )
    for span in exporter.get_finished_spans():
        surfaces[f"span {span.name}"] = json.dumps(
            {
                "status": span.status.description,
                "attributes": dict(span.attributes or {}),
                "events": [dict(e.attributes or {}) for e in span.events],
            },
            default=repr,
        )
    surfaces.update(_files(tmp_path / "sessions"))
    everything = b"".join(v if isinstance(v, bytes) else v.encode() for v in surfaces.values())
    if server == "error":
        assert b"upstream rejected the keys" in everything  # the page did come through
        assert agent.messages[-1].stop_reason is al.StopReason.ERROR  # type: ignore[union-attr]
    else:
        # A model's answer is kept in memory as it came (the result, the events, the history
        # a checkpoint copies); what the library writes of it is redacted.
        written = ("logs", "span ", str(tmp_path))
        surfaces = {k: v for k, v in surfaces.items() if k.startswith(written)}
        assert len(surfaces) > 3
    assert _find(surfaces) == []


def _suite(root: Path, url: str) -> Any:
    from agentloop_eval import Criteria, EvalCase, Registry, Suite, SuiteConfig

    name = f"leaktest{secrets.token_hex(3)}"

    def factory(model_id: str) -> ResolvedModel:
        spec = al.ModelSpec(provider=name, model_id=model_id)
        return ResolvedModel(spec, OpenAIChatProvider(base_url=url))

    register_provider(name, factory)
    case = EvalCase(name="leak", prompt="say hello", criteria=Criteria(contains=["hello"]))
    return Suite(
        config=SuiteConfig(name="leaks", model=f"{name}:m"),
        cases=[case],
        registry=Registry(),
        root=root,
    )


@pytest.mark.parametrize("server", ["error", "answer"])
async def test_no_evaluation_report_or_cassette_holds_a_key(
    servers: dict[str, str], environment: dict[str, str], tmp_path: Path, server: str
) -> None:
    from agentloop_eval import render_junit, render_markdown, render_table, run_suite, save_report

    suite = _suite(tmp_path, servers[server])
    report = await run_suite(suite, cassettes="record")
    save_report(report, tmp_path / "report.json")
    surfaces: dict[str, str | bytes] = _files(tmp_path)
    surfaces["markdown"] = render_markdown(report)
    surfaces["junit"] = render_junit(report)
    surfaces["table"] = render_table(report)
    assert (tmp_path / "cassettes" / "leak.jsonl").is_file()
    run = report.cases[0].runs[0]
    if server == "error":
        assert "upstream rejected the keys" in (run.error or "")
    assert _find(surfaces) == []


def test_the_echo_holds_every_secret_the_test_looks_for() -> None:
    # The search cannot pass for want of something to find.
    assert len(_find({"echo": ECHO})) == len(SECRETS)
    assert len(ENV) == len(VARIABLES)


def _redactor() -> Callable[[str], str]:
    from agentloop.secrets import redact

    return redact


def test_key_shapes_are_redacted_without_masking_ordinary_words() -> None:
    redact = _redactor()
    text = " ".join(["task-runner-configuration-values", "Bearer of news", *SHAPES[:3]])
    assert redact(text) == "task-runner-configuration-values Bearer of news *** *** ***"
    assert redact(f"Authorization: Bearer {SHAPES[3]}") == "Authorization: Bearer ***"
