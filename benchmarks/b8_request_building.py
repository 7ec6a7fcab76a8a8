"""B8 request building: CPU µs per turn to build one request body, against history length.

For each HTTP adapter, a conversation holding N earlier messages (N = 100, 1,000, 10,000,
30,000: prompts, answers calling a tool, tool results, final answers) takes turns as the loop
would: each turn appends an answer calling a tool and its result, then builds the next request
(``payload`` and JSON encoding, no network, no signing). ``plain`` is the provider with its
request cache off (``request_cache_bytes=0``: every message converted and encoded on every
call, as before the cache); ``cached`` is the default provider handed the messages as the loop
hands them (one ``MessageLog``, appended to), after one unmeasured request; ``cached_lists``
is the default provider handed a fresh list each turn, as a direct caller might (the cache then
checks that the repeated messages are the ones it saw). All see the same message objects, one
pass each. The figure is the median CPU time
(``time.process_time``, with the garbage collector off while measuring) of a turn's build;
the bodies of both are checked equal.

Goal: ``cached`` flat in N (what remains is copying the bytes of the body, which grows with
the history whatever is done).
"""

from __future__ import annotations

import gc
import hashlib
import statistics
import time
from typing import TYPE_CHECKING, Any

import msgspec

import agentloop as al
from agentloop.stream import LlmContext, MessageLog, ToolSchema

from ._common import base_parser, emit_json, meta

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop_providers._http import HttpProvider

__all__ = ["main"]

_AZURE = "https://example.openai.azure.com"
_TOOLS = [
    ToolSchema(
        name="read_file",
        description="Read a file.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    )
]


def _adapters() -> dict[str, tuple[Callable[[int], HttpProvider], al.ModelSpec]]:
    from agentloop_providers import (
        AnthropicProvider,
        AzureChatProvider,
        AzureResponsesProvider,
        BedrockProvider,
        GeminiProvider,
        MistralProvider,
        OllamaProvider,
        OpenAIChatProvider,
        OpenAIResponsesProvider,
        ProxyProvider,
        XaiChatProvider,
        XaiResponsesProvider,
    )

    def spec(provider: str, model_id: str) -> al.ModelSpec:
        return al.ModelSpec(provider=provider, model_id=model_id)

    return {
        "anthropic": (
            lambda n: AnthropicProvider(api_key="k", request_cache_bytes=n),
            spec("anthropic", "claude-sonnet-4-5"),
        ),
        "bedrock": (
            lambda n: BedrockProvider(api_key="k", region="us-east-1", request_cache_bytes=n),
            spec("bedrock", "anthropic.claude-sonnet-4-5-v1:0"),
        ),
        "gemini": (
            lambda n: GeminiProvider(api_key="k", request_cache_bytes=n),
            spec("gemini", "gemini-2.5-flash"),
        ),
        "openai_chat": (
            lambda n: OpenAIChatProvider(api_key="k", request_cache_bytes=n),
            spec("openai", "gpt-4.1"),
        ),
        "openai_responses": (
            lambda n: OpenAIResponsesProvider(api_key="k", request_cache_bytes=n),
            spec("openai", "gpt-4.1"),
        ),
        "mistral": (
            lambda n: MistralProvider(api_key="k", request_cache_bytes=n),
            spec("mistral", "mistral-large"),
        ),
        "ollama": (
            lambda n: OllamaProvider(request_cache_bytes=n),
            spec("ollama", "qwen3"),
        ),
        "azure_chat": (
            lambda n: AzureChatProvider(endpoint=_AZURE, api_key="k", request_cache_bytes=n),
            spec("azure", "gpt-4.1"),
        ),
        "azure_responses": (
            lambda n: AzureResponsesProvider(endpoint=_AZURE, api_key="k", request_cache_bytes=n),
            spec("azure", "gpt-4.1"),
        ),
        "xai_chat": (
            lambda n: XaiChatProvider(api_key="k", request_cache_bytes=n),
            spec("xai", "grok-4"),
        ),
        "xai_responses": (
            lambda n: XaiResponsesProvider(api_key="k", request_cache_bytes=n),
            spec("xai", "grok-4"),
        ),
        "proxy": (
            lambda n: ProxyProvider("http://proxy.invalid/v1", token="t", request_cache_bytes=n),
            spec("anthropic", "claude-sonnet-4-5"),
        ),
    }


def _turn(i: int, provider: str) -> list[al.LlmMessage]:
    """An answer calling a tool, and the tool's result (what each turn of the loop adds)."""
    call = al.ToolCall(id=f"call_{i:06d}", name="read_file", arguments={"path": f"src/m{i}.py"})
    return [
        al.AssistantMessage(
            provider=provider,
            content=[al.Text(text=f"Reading module {i} to check the imports."), call],
            stop_reason=al.StopReason.TOOL_USE,
        ),
        al.ToolResultMessage(
            tool_call_id=call.id,
            tool_name="read_file",
            content=[al.Text(text=f"import os\nimport sys\n\ndef f{i}():\n    return {i}\n")],
        ),
    ]


def history(n: int, provider: str) -> list[al.LlmMessage]:
    """``n`` messages: each prompt is followed by three tool turns and a final answer."""
    out: list[al.LlmMessage] = []
    i = 0
    while len(out) < n:
        out.append(al.UserMessage.from_text(f"Task {i}: tidy the imports of the package."))
        for j in range(3):
            out.extend(_turn(i * 10 + j, provider))
        out.append(
            al.AssistantMessage(provider=provider, content=[al.Text(text=f"Done with task {i}.")])
        )
        i += 1
    return out[:n]


def measure(
    make: Callable[[int], HttpProvider], model: al.ModelSpec, n: int, turns: int
) -> dict[str, Any]:
    """Median CPU µs per turn of each way of building at ``n`` earlier messages."""
    encode = msgspec.json.Encoder().encode
    options = al.StreamOptions()
    system = "You are a careful engineer."
    earlier = history(n, model.provider)
    added = [_turn(1_000_000 + t, model.provider) for t in range(turns)]
    times: dict[str, list[float]] = {}
    digests: dict[str, list[bytes]] = {}
    size = 0
    cache_bytes = 0
    # One pass per way over the same turns (the same message objects): interleaving them turn
    # by turn would leave each build the CPU caches and allocator the other one trashed.
    # ``plain``: the cache off. ``cached``: the loop's way, one ``MessageLog`` appended to.
    # ``cached_lists``: a fresh list per turn (a caller of the adapter's own), so the cache
    # checks that the repeated messages are the ones it saw.
    for name, budget, log in (
        ("plain", 0, False),
        ("cached", 64 * 1024 * 1024, True),
        ("cached_lists", 64 * 1024 * 1024, False),
    ):
        provider = make(budget)
        messages: list[al.LlmMessage] = MessageLog(earlier) if log else list(earlier)
        # The first request fills the cache.
        encode(
            provider.payload(model, LlmContext(system_prompt=system, messages=messages), options)
        )
        times[name], digests[name] = [], []
        for new in added:
            if log:
                messages.extend(new)
            else:
                messages = messages + new
            context = LlmContext(system_prompt=system, messages=messages, tools=_TOOLS)
            start = time.process_time()
            body = encode(provider.payload(model, context, options))
            times[name].append(time.process_time() - start)
            digests[name].append(hashlib.blake2b(body).digest())
            size = len(body)
            del body
        if name == "cached":
            cache = provider.request_cache
            cache_bytes = cache.nbytes if cache is not None else 0
    if not digests["plain"] == digests["cached"] == digests["cached_lists"]:
        raise AssertionError(f"{model.provider}: a cached body differs from the plain one")
    medians = {name: statistics.median(values) * 1e6 for name, values in times.items()}
    return {
        **medians,
        "speedup": medians["plain"] / medians["cached"] if medians["cached"] else None,
        "body_bytes": size,
        "cache_bytes": cache_bytes,
    }


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10_000, 30_000])
    parser.add_argument("--turns", type=int, default=21, help="measured turns per size")
    parser.add_argument("--adapters", nargs="+", default=None, help="default: all")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.turns = [10, 100], 3
    adapters = _adapters()
    names = args.adapters or list(adapters)
    out: dict[str, Any] = {
        "unit": "cpu_us_per_turn",
        "sizes": args.sizes,
        "turns": args.turns,
        "adapters": {},
        "meta": {**meta(), "smoke": args.smoke},
    }
    for name in names:
        make, model = adapters[name]
        rows: dict[str, Any] = {}
        for n in args.sizes:
            # The collector stays off while measuring: a pass costs in proportion to every
            # object of the process (the history, the other build's garbage), not to the build
            # it lands in. Request building makes no cycles: reference counting frees it all.
            gc.collect()
            gc.disable()
            try:
                rows[str(n)] = measure(make, model, n, args.turns)
            finally:
                gc.enable()
        small = rows[str(args.sizes[0])]["cached"]
        for row in rows.values():
            row["cached_ratio_to_smallest"] = row["cached"] / small if small else None
        out["adapters"][name] = rows
    emit_json(out)


if __name__ == "__main__":
    main()
