"""Prompt caching: where cache breakpoints go (Anthropic's Messages API, Bedrock Converse).

Both APIs cache a request's prefix up to a marked point, for requests that repeat it: reads of
a cached prefix cost a tenth of the input price, the write that creates it a little more than
the input price (Anthropic's prices; Bedrock's are alike). An agent resends its whole history
every turn, so caching pays from the second turn on. The breakpoints, four at most:

- ``tools``: the last tool definition (the tools are the start of every request);
- ``system``: the system prompt (with the tools before it);
- ``messages``: the last message of the request (written now, read by the next turn), and the
  last message of the previous turn's request (the history's last *stable* point, which this
  request repeats and which the cache most likely holds).

A prefix shorter than the model's minimum (1024 tokens for most Claude models) is simply not
cached: breakpoints cost nothing then. ``Usage.cache_read`` and ``Usage.cache_write`` report
what was read and written; with ``ModelSpec.pricing`` the cost counts them at their prices.

Knobs: ``AnthropicProvider(prompt_caching=...)`` and ``BedrockProvider(prompt_caching=...)``
take ``True``/``False`` or a ``PromptCaching``; ``StreamOptions.extra["prompt_caching"]`` sets
either for one call (``turn_options`` can set it per turn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import msgspec

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["PromptCaching", "caching_for", "message_breakpoints"]


class PromptCaching(msgspec.Struct, frozen=True, kw_only=True):
    """Where to put cache breakpoints.

    Attributes:
        tools: after the last tool definition.
        system: after the system prompt.
        messages: how many breakpoints in the history (0, 1 or 2): the last message, then the
            last message of the previous turn's request.
        ttl: how long Anthropic keeps the entries: ``"5m"`` (the default) or ``"1h"`` (its
            writes cost more). Bedrock uses its default.
    """

    tools: bool = True
    system: bool = True
    messages: int = 2
    ttl: Literal["5m", "1h"] = "5m"


_ON = PromptCaching()
_OFF = PromptCaching(tools=False, system=False, messages=0)


def caching_for(default: bool | PromptCaching, extra: dict[str, Any]) -> PromptCaching:
    """The breakpoints for one call: ``extra["prompt_caching"]`` if set, else ``default``.

    Raises:
        TypeError: the setting is neither a bool nor a ``PromptCaching``.
    """
    value = extra.get("prompt_caching", default)
    if isinstance(value, PromptCaching):
        return value
    if isinstance(value, bool):
        return _ON if value else _OFF
    raise TypeError(f"prompt_caching must be a bool or a PromptCaching, not {value!r}")


def message_breakpoints(roles: Sequence[str], wanted: int) -> list[int]:
    """Indices of the messages to mark: the last one, then the one that closed the previous
    turn's request (the message just before the last assistant message), at most ``wanted``."""
    if wanted <= 0 or not roles:
        return []
    marks = [len(roles) - 1]
    if wanted > 1:
        for i in range(len(roles) - 1, 0, -1):
            if roles[i] == "assistant":
                if i - 1 not in marks:
                    marks.append(i - 1)
                break
    return marks
