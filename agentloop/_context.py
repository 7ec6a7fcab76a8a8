"""Context management: token estimates, a sliding window, and a summarising compactor.

Both transformers keep two anchors, the system prompt (counted against the budget, never
dropped) and the first user message, and never split a tool call from its results: an assistant
message with tool calls, the ``ToolResultMessage`` values answering it and anything between them
move as one unit. They drop (or summarise) the oldest units after the anchors and keep the most
recent ones; the newest unit is always kept, even when it alone exceeds the budget.

Histories grow by appending, and a transformer sees the whole history on every turn, so each
transformer instance keeps an index of token counts and legal cut points that it extends with the
new messages only; use one instance per conversation for that to pay off.
"""

from __future__ import annotations

import bisect
import contextlib
import operator
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from ._history import Window
from ._stream import Accumulator
from ._types import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    Extension,
    Image,
    LlmContext,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from ._abc import StreamFn, TokenCounter
    from ._config import TransformContext

__all__ = [
    "Compaction",
    "EstimatingCounter",
    "SlidingWindow",
    "SummarizingCompactor",
    "compact_messages",
    "estimate_tokens",
    "render_transcript",
]

_encode = msgspec.json.encode


# --------------------------------------------------------------------------- token counting


class EstimatingCounter:
    """The default estimate: characters divided by ``chars_per_token``, images at a fixed cost.

    Tool call arguments count as their JSON text; custom messages as their JSON encoding (a
    conservative guess, since ``convert_to_llm`` may drop them). Each message adds
    ``message_overhead`` tokens for the role markers a provider wraps it in.
    """

    __slots__ = ("chars_per_token", "image_tokens", "message_overhead")

    def __init__(
        self, *, chars_per_token: float = 4.0, image_tokens: int = 1200, message_overhead: int = 4
    ) -> None:
        if chars_per_token <= 0:
            raise ValueError("chars_per_token must be positive")
        self.chars_per_token = chars_per_token
        self.image_tokens = image_tokens
        self.message_overhead = message_overhead

    def count_text(self, text: str) -> int:
        """Tokens in ``text``: its length over ``chars_per_token``, rounded up."""
        return -int(-len(text) // self.chars_per_token)

    def count(self, message: AgentMessage) -> int:
        """Tokens in ``message``: its text, tool calls and images, plus ``message_overhead``."""
        chars = 0
        images = 0
        if isinstance(message, CustomMessage):
            chars = len(_encode(message))
        else:
            if type(message) is ToolResultMessage:
                chars += len(message.tool_name)
            for block in message.content:
                cls = type(block)
                if cls is Text:
                    chars += len(block.text)  # type: ignore[union-attr]
                elif cls is ToolCall:
                    assert isinstance(block, ToolCall)
                    raw = block.partial_json
                    chars += len(block.name) + (
                        len(raw) if raw is not None else len(_encode(block.arguments))
                    )
                elif cls is Image:
                    images += 1
                elif cls is Thinking:
                    assert isinstance(block, Thinking)
                    chars += len(block.thinking) + len(block.data or "")
                elif cls is Extension:
                    assert isinstance(block, Extension)
                    chars += len(_encode(block.data))
        return (
            -int(-chars // self.chars_per_token)
            + images * self.image_tokens
            + self.message_overhead
        )


_DEFAULT_COUNTER = EstimatingCounter()


def estimate_tokens(
    messages: Sequence[AgentMessage],
    *,
    system_prompt: str = "",
    counter: TokenCounter | None = None,
) -> int:
    """The estimated tokens of a request holding ``system_prompt`` and ``messages``."""
    counter = counter or _DEFAULT_COUNTER
    return counter.count_text(system_prompt) + sum(counter.count(m) for m in messages)


# --------------------------------------------------------------------------- the index


class _Index:
    """Token counts and legal cut points of one history, extended as the history grows.

    ``cum[j]`` is the tokens of ``messages[:j]``; ``legal[j]`` says whether the history may be cut
    just before message ``j`` without separating a tool call from its result.
    """

    __slots__ = (
        "counter",
        "cum",
        "first_user",
        "generation",
        "legal",
        "messages",
        "owner",
        "source",
    )

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.generation = 0
        self.source: Sequence[AgentMessage] | None = None
        self._reset()

    def _reset(self) -> None:
        self.messages: list[AgentMessage] = []
        self.cum = [0]
        self.legal = [True]
        self.first_user: int | None = None
        self.owner: dict[str, int] = {}  # tool call id -> index of the assistant message
        self.generation += 1

    def sync(self, messages: Sequence[AgentMessage]) -> None:
        """Catch up with ``messages``: O(new messages) when it is the list seen last time, grown
        at its end (a history is append-only); a full check otherwise."""
        known = self.messages
        n = len(known)
        same = (
            messages is self.source
            and len(messages) >= n
            and (n == 0 or messages[n - 1] is known[n - 1])
        )
        if not same and (len(messages) < n or not all(map(operator.is_, messages, known))):
            self._reset()
        self.source = messages
        for i in range(len(self.messages), len(messages)):
            self._add(i, messages[i])

    def _add(self, i: int, message: AgentMessage) -> None:
        self.messages.append(message)
        self.cum.append(self.cum[-1] + self.counter.count(message))
        self.legal.append(True)
        cls = type(message)
        if cls is ToolResultMessage:
            assert isinstance(message, ToolResultMessage)
            start = self.owner.get(message.tool_call_id)
            if start is not None:
                legal = self.legal
                for j in range(start + 1, i + 1):
                    legal[j] = False
        elif cls is AssistantMessage:
            assert isinstance(message, AssistantMessage)
            for block in message.content:
                if type(block) is ToolCall:
                    self.owner[block.id] = i
        elif cls is UserMessage and self.first_user is None:
            self.first_user = i

    @property
    def total(self) -> int:
        return self.cum[-1]

    def anchor_end(self) -> int:
        """The end of the anchored prefix: through the first user message, at a legal cut."""
        if self.first_user is None:
            return 0
        h = self.first_user + 1
        while not self.legal[h]:
            h += 1
        return h

    def cut_for(self, avail: int, lo: int) -> int:
        """The earliest legal cut ``j >= lo`` whose tail ``messages[j:]`` fits in ``avail``.

        When no tail fits, the start of the newest unit (never earlier than ``lo``).
        """
        cum, legal = self.cum, self.legal
        n = len(self.messages)
        j = bisect.bisect_left(cum, cum[n] - avail, lo=lo)
        while j < n and not legal[j]:
            j += 1
        if j >= n:
            j = n - 1
            while j > lo and not legal[j]:
                j -= 1
        return max(j, lo)


def _model_budget(model: ModelSpec) -> int | None:
    window = model.context_window
    if window is None:
        return None
    reserve = model.max_output_tokens or window // 4
    return max(window - reserve, 1)


class Compaction(msgspec.Struct, frozen=True, kw_only=True):
    """What a compaction produced: the new message list and what it cost or saved."""

    messages: list[AgentMessage]
    dropped: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summary: str | None = None


# --------------------------------------------------------------------------- sliding window


class SlidingWindow:
    """A ``transform_context`` that keeps the anchors and the newest units within a budget.

    Args:
        max_tokens: the normal budget for a request; by default the model's context window less
            its maximum output (a quarter of the window when that is unset). With neither, the
            window passes messages through.
        overflow_tokens: the tighter budget used when ``ctx.overflow`` is set (default: half the
            normal budget).
        system_prompt: counted against the budget (the transformer never sees it otherwise).
            When the ``TransformContext`` carries a ``system_prompt`` attribute, that wins.
        counter: how tokens are counted (default: ``EstimatingCounter()``).
    """

    def __init__(
        self,
        max_tokens: int | None = None,
        *,
        overflow_tokens: int | None = None,
        system_prompt: str = "",
        counter: TokenCounter | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.overflow_tokens = overflow_tokens
        self.system_prompt = system_prompt
        self.counter: TokenCounter = counter or _DEFAULT_COUNTER
        self._index = _Index(self.counter)

    def budget(self, model: ModelSpec, *, overflow: bool) -> int | None:
        """The budget for a request to ``model``: the tighter one when ``overflow``."""
        normal = self.max_tokens if self.max_tokens is not None else _model_budget(model)
        if normal is None or not overflow:
            return normal
        if self.overflow_tokens is not None:
            return self.overflow_tokens
        return max(normal // 2, 1)

    def _system_tokens(self, ctx: TransformContext | None) -> int:
        prompt = ctx.system_prompt if ctx is not None else ""
        if not prompt:
            prompt = self.system_prompt
        return self.counter.count_text(prompt) if prompt else 0

    def _apply(
        self, messages: list[AgentMessage], budget: int, fixed: int
    ) -> tuple[list[AgentMessage], Compaction | None]:
        index = self._index
        index.sync(messages)
        before = fixed + index.total
        if before <= budget:
            return messages, None
        h = index.anchor_end()
        j = index.cut_for(budget - fixed - index.cum[h], h)
        if j <= h:
            return messages, None
        kept = Window(messages, h, j)
        after = before - (index.cum[j] - index.cum[h])
        return kept, Compaction(
            messages=kept, dropped=j - h, tokens_before=before, tokens_after=after
        )

    def __call__(self, messages: list[AgentMessage], ctx: TransformContext) -> list[AgentMessage]:
        """Fit ``messages`` to the budget, reporting what was dropped with ``ctx.report``.

        Returns ``messages`` itself when it fits already.
        """
        budget = self.budget(ctx.model, overflow=ctx.overflow)
        if budget is None:
            return messages
        kept, done = self._apply(messages, budget, self._system_tokens(ctx))
        if done is not None:
            ctx.report(
                f"sliding window dropped {done.dropped} messages "
                f"(~{done.tokens_before - done.tokens_after} tokens) to fit {budget} tokens",
                dropped=done.dropped,
                details={
                    "strategy": "sliding_window",
                    "budget": budget,
                    "overflow": ctx.overflow,
                    "tokens_before": done.tokens_before,
                    "tokens_after": done.tokens_after,
                },
            )
        return kept


def compact_messages(
    messages: Sequence[AgentMessage],
    *,
    max_tokens: int | None = None,
    model: ModelSpec | None = None,
    system_prompt: str = "",
    counter: TokenCounter | None = None,
) -> Compaction:
    """Apply the sliding window once, for manual compaction (``Agent.compact()``).

    Args:
        messages: the history.
        max_tokens: the budget; by default derived from ``model`` as ``SlidingWindow`` does.
        model: the model whose context window sets the default budget.
        system_prompt: counted against the budget.
        counter: how tokens are counted.

    Returns:
        The compacted history (a new list) and what was dropped.

    Raises:
        ValueError: there is no budget: neither ``max_tokens`` nor a model with a context window.
    """
    budget = max_tokens
    if budget is None and model is not None:
        budget = _model_budget(model)
    if budget is None:
        raise ValueError("compact_messages needs max_tokens or a model with a context_window")
    window = SlidingWindow(budget, system_prompt=system_prompt, counter=counter)
    history = list(messages)
    kept, done = window._apply(history, budget, window._system_tokens(None))
    if done is None:
        total = window._system_tokens(None) + window._index.total
        return Compaction(messages=kept, tokens_before=total, tokens_after=total)
    return done


# --------------------------------------------------------------------------- summaries

SUMMARY_INSTRUCTIONS = (
    "You compress conversation histories. Summarise the transcript you are given so that the "
    "conversation can continue without it: keep the user's goals and constraints, decisions "
    "made, facts and results learned from tools (names, numbers, paths, identifiers), and what "
    "remains to be done. Write plain prose or terse bullet points, no preamble."
)
SUMMARY_HEADER = "[Summary of the earlier conversation]"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} chars]"


def render_transcript(messages: Sequence[AgentMessage], *, max_block_chars: int = 2000) -> str:
    """A plain-text transcript of ``messages`` for a summarising model (thinking omitted)."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, CustomMessage):
            tag = type(message).__struct_config__.tag
            lines.append(f"Note ({tag}): {_clip(_encode(message).decode(), max_block_chars)}")
            continue
        if type(message) is ToolResultMessage:
            assert isinstance(message, ToolResultMessage)
            status = ", error" if message.is_error else ""
            head = f"Tool result ({message.tool_name or message.tool_call_id}{status}): "
        elif type(message) is UserMessage:
            head = "User: "
        else:
            head = "Assistant: "
        parts: list[str] = []
        for block in message.content:
            if isinstance(block, Text):
                parts.append(_clip(block.text, max_block_chars))
            elif isinstance(block, ToolCall):
                raw = block.partial_json or _encode(block.arguments).decode()
                parts.append(f"[calls tool {block.name} with {_clip(raw, max_block_chars)}]")
            elif isinstance(block, Image):
                parts.append("[image]")
        lines.append(head + " ".join(parts))
    return "\n".join(lines)


class SummarizingCompactor:
    """An ``async_transform_context`` that replaces the oldest units with a model's summary.

    Over budget, the history becomes: the anchors, one user message holding the summary, and the
    newest units (about ``keep_recent`` of the budget). The summary is kept and reused while the
    result fits; when it no longer does, the old summary and the next units are summarised
    together. If the summary call fails (error, empty answer, exception or ``timeout``), the
    sliding window is applied instead. Cancellation is never swallowed.

    Args:
        stream_fn: the provider making summaries.
        model: the summarising model (default: the model of the request being shaped).
        max_tokens: the normal budget, as for ``SlidingWindow``.
        overflow_tokens: the budget after an overflow, as for ``SlidingWindow``.
        system_prompt: counted against the budget, as for ``SlidingWindow``.
        counter: how tokens are counted, as for ``SlidingWindow``.
        keep_recent: the share of the budget kept verbatim after a summary.
        summary_max_tokens: the output limit of the summary call (also reserved in the budget).
        instructions: the summarising model's system prompt.
        timeout: seconds the summary call may take.
        stream_options: options for the summary call (``max_tokens`` is filled in when unset).
        get_api_key: resolves the API key for the summarising provider before each call.
    """

    def __init__(
        self,
        stream_fn: StreamFn,
        *,
        model: ModelSpec | None = None,
        max_tokens: int | None = None,
        overflow_tokens: int | None = None,
        system_prompt: str = "",
        counter: TokenCounter | None = None,
        keep_recent: float = 0.5,
        summary_max_tokens: int = 1024,
        instructions: str = SUMMARY_INSTRUCTIONS,
        timeout: float | None = 120.0,
        stream_options: StreamOptions | None = None,
        get_api_key: Callable[[str], Awaitable[str | None]] | None = None,
    ) -> None:
        if not 0.0 < keep_recent <= 1.0:
            raise ValueError("keep_recent must be in (0, 1]")
        self.stream_fn = stream_fn
        self.model = model
        self.keep_recent = keep_recent
        self.summary_max_tokens = summary_max_tokens
        self.instructions = instructions
        self.timeout = timeout
        self.stream_options = stream_options or StreamOptions()
        self.get_api_key = get_api_key
        self.window = SlidingWindow(
            max_tokens,
            overflow_tokens=overflow_tokens,
            system_prompt=system_prompt,
            counter=counter,
        )
        self._index = self.window._index
        # The summary in use: (index generation, start and end of the summarised range, message)
        self._summary: tuple[int, int, int, UserMessage] | None = None

    async def __call__(
        self, messages: list[AgentMessage], ctx: TransformContext
    ) -> list[AgentMessage]:
        """Fit ``messages`` to the budget, summarising if needed; reports with ``ctx.report``."""
        budget = self.window.budget(ctx.model, overflow=ctx.overflow)
        if budget is None:
            return messages
        fixed = self.window._system_tokens(ctx)
        index = self._index
        index.sync(messages)
        if fixed + index.total <= budget:
            return messages
        h = index.anchor_end()
        cached = self._summary
        done: Compaction | str | None = None
        if cached is not None and cached[:2] == (index.generation, h):
            _, _, end, note = cached
            before = fixed + index.total
            after = fixed + index.cum[h] + self.window.counter.count(note) + before - fixed
            after -= index.cum[end]
            if after <= budget:
                kept: list[AgentMessage] = Window(messages, h, end, [note])
                done = Compaction(
                    messages=kept, dropped=end - h, tokens_before=before, tokens_after=after
                )
        if done is None:
            done = await self._summarise(messages, budget, fixed, self.model or ctx.model)
        if isinstance(done, Compaction):
            reused = done.summary is None
            ctx.report(
                f"{'reused the summary of' if reused else 'summarised'} {done.dropped} messages "
                f"(~{done.tokens_before - done.tokens_after} tokens saved) to fit {budget} tokens",
                dropped=done.dropped,
                details={
                    "strategy": "summary",
                    "reused": reused,
                    "budget": budget,
                    "overflow": ctx.overflow,
                    "tokens_before": done.tokens_before,
                    "tokens_after": done.tokens_after,
                },
            )
            return done.messages
        kept, fallback = self.window._apply(messages, budget, fixed)
        if fallback is not None or done:
            ctx.report(
                f"summary failed ({done or 'nothing to summarise'}); sliding window dropped "
                f"{0 if fallback is None else fallback.dropped} messages",
                dropped=0 if fallback is None else fallback.dropped,
                details={
                    "strategy": "sliding_window_fallback",
                    "budget": budget,
                    "overflow": ctx.overflow,
                    "error": done,
                },
            )
        return kept

    async def compact(
        self, messages: Sequence[AgentMessage], *, model: ModelSpec, system_prompt: str = ""
    ) -> Compaction:
        """Summarise all but the newest ``keep_recent`` of the budget now (``Agent.compact()``).

        Raises:
            ValueError: no budget (no ``max_tokens`` and no model context window).
            RuntimeError: the summary call failed; the message says why.
        """
        budget = self.window.budget(model, overflow=False)
        if budget is None:
            raise ValueError("compact needs max_tokens or a model with a context_window")
        fixed = self.window.counter.count_text(system_prompt) if system_prompt else 0
        history = list(messages)
        self._index.sync(history)
        done = await self._summarise(history, budget, fixed, self.model or model)
        if isinstance(done, Compaction):
            return done
        if done:
            raise RuntimeError(f"summary failed: {done}")
        total = fixed + self._index.total
        return Compaction(messages=history, tokens_before=total, tokens_after=total)

    async def _summarise(
        self, messages: list[AgentMessage], budget: int, fixed: int, model: ModelSpec
    ) -> Compaction | str:
        """A summary compaction, or why there is none ("" when there is nothing to summarise)."""
        index = self._index
        generation = index.generation
        h = index.anchor_end()
        start, previous = h, None
        cached = self._summary
        if cached is not None and cached[:2] == (generation, h):
            _, _, start, previous = cached
        avail = min(
            int(budget * self.keep_recent),
            budget - fixed - index.cum[h] - self.summary_max_tokens,
        )
        j = index.cut_for(max(avail, 0), start)
        if j <= start:
            return ""
        transcript = render_transcript(messages[start:j])
        if previous is not None:
            transcript = f"{previous.content[0].text}\n\n{transcript}"  # type: ignore[union-attr]
        before = fixed + index.total
        after = fixed + index.cum[h] + index.total - index.cum[j]
        try:
            text = await self._call_model(model, transcript)
        except Exception as exc:  # a failed summary falls back; cancellation is BaseException
            return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        note = UserMessage(content=[Text(text=f"{SUMMARY_HEADER}\n{text}")])
        if index.generation == generation:
            self._summary = (generation, h, j, note)
        kept = Window(messages, h, j, [note])
        after += self.window.counter.count(note)
        return Compaction(
            messages=kept, dropped=j - h, tokens_before=before, tokens_after=after, summary=text
        )

    async def _call_model(self, model: ModelSpec, transcript: str) -> str:
        options = self.stream_options
        if options.max_tokens is None:
            options = msgspec.structs.replace(options, max_tokens=self.summary_max_tokens)
        if self.get_api_key is not None:
            key = await self.get_api_key(model.provider)
            if key is not None:
                options = msgspec.structs.replace(options, api_key=key)
        request = LlmContext(
            system_prompt=self.instructions,
            messages=[UserMessage(content=[Text(text=transcript)])],
        )
        acc = Accumulator(model)
        with anyio.fail_after(self.timeout):
            events: Any = self.stream_fn(model, request, options)
            closer: contextlib.AbstractAsyncContextManager[Any] = (
                contextlib.aclosing(events)
                if hasattr(events, "aclose")
                else contextlib.nullcontext()
            )
            async with closer:
                async for event in events:
                    if not acc.push(event):
                        break
        message = acc.finish()
        if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
            raise RuntimeError(message.error_message or f"summary call {message.stop_reason}")
        text = message.text.strip()
        if not text:
            raise RuntimeError("the summary model returned no text")
        return text
