"""A local server's context window: from the model string, the server's error, or its API.

The loop trims a history that overflowed to the model's context window, and only knows it from
``ModelSpec.context_window``. A hosted model's window is in the catalog; a local server's
depends on how it was started (``llama-server -c 512``). Three sources, most direct first:

1. The model string: ``llamacpp:qwen?context_window=8192`` (``split_model_options``).
2. The overflow error itself: llama.cpp states ``"n_ctx": 512`` in its 400 body, which becomes
   ``ErrorEvent.context_window`` (``_classify``).
3. The server's API, asked when an overflow error does not say (``discover_context_window``):
   llama.cpp's ``GET /props``, Ollama's ``/api/ps`` and ``POST /api/show``, LM Studio's
   ``GET /api/v0/models/{id}``, vLLM's ``GET /v1/models`` (``max_model_len``).

Applications may also ask up front, to fill their ``ModelSpec`` before the first call::

    window = await discover_context_window(provider, "qwen")
"""

from __future__ import annotations

import contextlib
import urllib.parse
import weakref
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from agentloop import ErrorKind
from agentloop.stream import ErrorEvent

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator

    from agentloop import ModelSpec
    from agentloop.stream import AssistantMessageEvent

    from ._http import HttpProvider

__all__ = ["DISCOVERABLE", "discover_context_window", "learning_window", "split_model_options"]

DISCOVERABLE = frozenset({"llamacpp", "ollama", "ollama_openai", "lmstudio", "vllm"})
_MAX_BODY = 1 << 20  # a props or model list is a few kilobytes; more is not what we asked for
# What each provider was told, by model id: asked once per provider, not per call.
_cache: weakref.WeakKeyDictionary[HttpProvider, dict[str, int]] = weakref.WeakKeyDictionary()


def split_model_options(model_id: str) -> tuple[str, int | None]:
    """A model id without its query, and the ``context_window`` the query sets.

    Raises:
        ValueError: the query is anything but ``context_window=<positive integer>``.
    """
    bare, mark, query = model_id.partition("?")
    if not mark:
        return model_id, None
    try:
        fields = urllib.parse.parse_qs(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise ValueError(f"malformed model string options {query!r}") from None
    unknown = set(fields) - {"context_window"}
    if unknown:
        raise ValueError(f"unknown model string option(s): {', '.join(sorted(unknown))}")
    raw = fields["context_window"][-1]
    if not raw.isdigit() or not 0 < int(raw) < 1 << 40:
        raise ValueError(f"context_window must be a positive integer, not {raw!r}")
    return bare, int(raw)


def _positive(value: Any) -> int | None:
    return value if type(value) is int and 0 < value < 1 << 40 else None


def _root(base_url: str) -> str:
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


def _llamacpp(body: Any, model_id: str) -> int | None:
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    if isinstance(settings, dict) and _positive(settings.get("n_ctx")):
        return _positive(settings.get("n_ctx"))
    return _positive(body.get("n_ctx"))


def _ollama_ps(body: Any, model_id: str) -> int | None:
    models = body.get("models") if isinstance(body, dict) else None
    for entry in models if isinstance(models, list) else ():
        if isinstance(entry, dict) and model_id in (entry.get("name"), entry.get("model")):
            return _positive(entry.get("context_length"))
    return None


def _ollama_show(body: Any, model_id: str) -> int | None:
    if not isinstance(body, dict):
        return None
    parameters = body.get("parameters")
    if isinstance(parameters, str):  # "num_ctx 8192\nstop ..." when the Modelfile sets one
        for line in parameters.splitlines():
            name, _, value = line.strip().partition(" ")
            if name == "num_ctx" and value.strip().isdigit():
                return _positive(int(value.strip()))
    info = body.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if isinstance(key, str) and key.endswith(".context_length"):
                return _positive(value)
    return None


def _lmstudio(body: Any, model_id: str) -> int | None:
    if not isinstance(body, dict):
        return None
    return _positive(body.get("loaded_context_length")) or _positive(body.get("max_context_length"))


def _vllm(body: Any, model_id: str) -> int | None:
    data = body.get("data") if isinstance(body, dict) else None
    for entry in data if isinstance(data, list) else ():
        if isinstance(entry, dict) and entry.get("id") == model_id:
            return _positive(entry.get("max_model_len"))
    return None


async def _ask(provider: HttpProvider, method: str, url: str, **kwargs: Any) -> Any:
    async with provider.client.stream(method, url, **kwargs) as response:
        if response.status_code != 200:
            return None
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > _MAX_BODY:
                return None
    try:
        return msgspec.json.decode(bytes(body))
    except (msgspec.DecodeError, RecursionError):
        return None


async def discover_context_window(
    provider: HttpProvider, model_id: str, *, within: float = 5.0
) -> int | None:
    """The context window the server behind ``provider`` runs ``model_id`` with, if it says.

    Asks llama.cpp, Ollama, LM Studio or vLLM (by the provider's preset name) and remembers
    the answer per provider and model. ``None`` when the server has no such API, does not
    answer within ``within`` seconds, or answers something else: never an exception.
    """
    name = provider.provider_name
    if name not in DISCOVERABLE:
        return None
    known = _cache.setdefault(provider, {})
    if model_id in known:
        return known[model_id]
    root = _root(provider.base_url)
    quoted = urllib.parse.quote(model_id, safe="")
    by_server: dict[str, list[tuple[str, str, dict[str, Any], Any]]] = {
        "llamacpp": [("GET", f"{root}/props", {}, _llamacpp)],
        "ollama": [
            ("GET", f"{root}/api/ps", {}, _ollama_ps),
            ("POST", f"{root}/api/show", {"json": {"model": model_id}}, _ollama_show),
        ],
        "lmstudio": [("GET", f"{root}/api/v0/models/{quoted}", {}, _lmstudio)],
        "vllm": [("GET", f"{provider.base_url}/models", {}, _vllm)],
    }
    asks = by_server[name.removesuffix("_openai")]
    window: int | None = None
    with anyio.move_on_after(within):
        for method, url, kwargs, read in asks:
            try:
                body = await _ask(provider, method, url, **kwargs)
            except Exception:  # noqa: BLE001 (httpx's transport errors: the server said nothing)
                body = None
            window = read(body, model_id) if body is not None else None
            if window is not None:
                known[model_id] = window
                break
    return window


async def learning_window(
    provider: HttpProvider, model: ModelSpec, events: AsyncIterator[AssistantMessageEvent]
) -> AsyncGenerator[AssistantMessageEvent, None]:
    """``events``, with an overflow error's ``context_window`` asked of the server when the
    error did not state it."""
    async with contextlib.aclosing(events) as stream:  # type: ignore[type-var]
        async for event in stream:
            if (
                type(event) is ErrorEvent
                and event.kind is ErrorKind.CONTEXT_OVERFLOW
                and event.context_window is None
            ):
                window = await discover_context_window(provider, model.model_id)
                if window is not None:
                    event = msgspec.structs.replace(event, context_window=window)
            yield event
