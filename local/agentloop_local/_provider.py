"""``LocalProvider``: a ``StreamFn`` that runs a GGUF model in this process.

Each call leases a context of the model (queueing behind other agents' calls when all are
busy), renders the conversation with the model's own chat template, and generates in a worker
thread, a few tokens per trip, so the event loop never waits on the model. Before every token
the worker asks whether its task was cancelled (``anyio.from_thread.check_cancelled``), and
while the prompt is being read llama.cpp asks the same between the steps of its computation:
an abort, a steering interrupt or a timeout stops generation within one token, and the worker
is done before the call returns — no thread outlives the call.

Tool calls are held to a grammar (see ``_grammar``): a forced call (``tool_choice`` of
``"required"`` or a tool's name) is the whole answer, and any call parses. Usage is exact: the
tokenizer's count of the prompt (``cache_read`` for the part the context still held from the
previous call) and of the tokens generated.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import time
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from agentloop import ErrorKind, MissingExtra, StopReason, Usage
from agentloop.stream import Done, ErrorEvent, StreamStart

from ._errors import LocalModelError
from ._grammar import LAZY_TRIGGER, call_grammar
from ._models import LoadProgress, LocalModel, _cancelled, load_model
from ._native import Sampler
from ._splitter import OutputSplitter

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Callable

    from agentloop import ModelSpec, StreamOptions
    from agentloop.stream import AssistantMessageEvent, LlmContext, ToolSchema

    from ._native import NativeContext

__all__ = ["LocalProvider"]

_TRIP_SECONDS = 0.02  # a worker returns what it generated at least this often
_UNFORCED = (None, "auto", "none", "required")


class _Overflow(LocalModelError):
    def __init__(self, prompt: int, window: int) -> None:
        super().__init__(
            f"local: the prompt is {prompt} tokens, more than the context window of {window} tokens"
        )
        self.window = window


class _Generation:
    """One call's work in the worker thread: read the prompt, then generate token by token."""

    def __init__(
        self,
        model: LocalModel,
        context: NativeContext,
        *,
        max_tokens: int,
        temperature: float,
        seed: int,
    ) -> None:
        self.model = model
        self.context = context
        self.max_tokens = max_tokens
        # llama.cpp rounds a context up; the window the model was given is the limit.
        self.window = min(context.n_ctx, model.context_window)
        self.temperature = temperature
        self.seed = seed
        self.sampler: Sampler | None = None
        self.prompt_tokens = 0
        self.reused = 0
        self.generated = 0
        self.stop = StopReason.STOP
        self.finished = False
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")

    def prepare(self, request: LlmContext, tools: list[ToolSchema], forced: bool) -> None:
        native, context = self.model.native, self.context
        grammar = call_grammar(tools, forced=forced) if tools else None
        prompt = self.model.template.render(request, tools=bool(tools))
        tokens = native.tokenize(prompt, special=True)
        bos = native.bos
        if bos and not prompt.startswith(bos) and native.adds_bos:
            tokens = native.tokenize(bos, special=True) + tokens
        self.prompt_tokens = len(tokens)
        if len(tokens) >= self.window:
            raise _Overflow(len(tokens), self.window)
        context.set_abort(_cancelled)
        self.reused = context.reuse_prefix(tokens)
        context.decode(tokens[self.reused :])
        self.sampler = Sampler(
            native,
            temperature=self.temperature,
            seed=self.seed,
            grammar=grammar,
            lazy_patterns=(LAZY_TRIGGER,) if grammar and not forced else (),
        )

    def step(self) -> str:
        """Generate until a trip's time is up or generation ends; the text generated."""
        native, context, sampler = self.model.native, self.context, self.sampler
        assert sampler is not None
        out: list[str] = []
        until = time.monotonic() + _TRIP_SECONDS
        while True:
            anyio.from_thread.check_cancelled()
            if self.generated >= self.max_tokens or len(context.tokens) >= self.window:
                self.stop = StopReason.LENGTH
                break
            token = sampler.sample(context)
            if native.is_end(token):
                break
            self.generated += 1
            out.append(self._utf8.decode(native.piece(token)))
            context.decode([token])
            if time.monotonic() >= until:
                return "".join(out)
        self.finished = True
        out.append(self._utf8.decode(b"", final=True))
        return "".join(out)

    def close(self) -> None:
        if self.sampler is not None:
            self.sampler.close()
            self.sampler = None

    def usage(self) -> Usage:
        fresh = self.prompt_tokens - self.reused
        return Usage(
            input=fresh,
            output=self.generated,
            cache_read=self.reused,
            total=fresh + self.reused + self.generated,
        )


async def _trip(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a worker thread; a failure caused by our cancellation is the
    cancellation."""
    try:
        return await anyio.to_thread.run_sync(fn, *args)
    except LocalModelError:
        await anyio.lowlevel.checkpoint_if_cancelled()
        raise


class LocalProvider:
    """A ``StreamFn`` over a GGUF model loaded in this process.

    Args:
        model: a loaded ``LocalModel``, or what to load on the first call (a preset name such
            as ``"smollm2"`` or a path to a ``.gguf`` file).
        context_window: tokens per context, when ``model`` is loaded here.
        max_contexts: generations at once, when ``model`` is loaded here (see ``LocalModel``).
        temperature: used when ``StreamOptions.temperature`` is unset (0 is greedy).
        max_tokens: the output limit when neither ``StreamOptions.max_tokens`` nor the
            model's ``max_output_tokens`` sets one.
        seed: the sampler's seed (a fresh one per call when ``None``).
        on_progress: receives ``LoadProgress`` events while the model loads.
    """

    provider_name = "local"

    def __init__(
        self,
        model: LocalModel | str,
        *,
        context_window: int | None = None,
        max_contexts: int = 1,
        temperature: float = 0.7,
        max_tokens: int = 1024,
        seed: int | None = None,
        on_progress: Callable[[LoadProgress], None] | None = None,
    ) -> None:
        self._model = model if isinstance(model, LocalModel) else None
        self._source = model if isinstance(model, str) else model.name
        self.context_window = context_window
        self.max_contexts = max_contexts
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.on_progress = on_progress

    def __repr__(self) -> str:
        return f"LocalProvider({self._source!r})"

    async def model(self) -> LocalModel:
        """The model, loaded on first use (every caller shares one load).

        Raises:
            UnknownLocalModel: no preset or file by that name.
            LocalModelError: the model cannot be loaded.
            MissingExtra: llama-cpp-python (the ``[local]`` extra) is not installed.
        """
        if self._model is None:
            self._model = await load_model(
                self._source,
                context_window=self.context_window,
                max_contexts=self.max_contexts,
                on_progress=self.on_progress,
            )
        return self._model

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """Stream one answer (an async generator: close it with ``aclosing``)."""
        return self._stream(model, context, options)

    async def _stream(
        self, spec: ModelSpec, request: LlmContext, options: StreamOptions
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        yield StreamStart(provider=spec.provider, model_id=spec.model_id)
        choice = options.tool_choice
        tools = [] if choice == "none" else list(request.tools)
        forced: list[ToolSchema] = []
        if tools and choice == "required":
            forced = tools
        elif tools and choice not in _UNFORCED:
            forced = [t for t in tools if t.name == choice]
            if not forced:
                yield ErrorEvent(message=f"local: tool_choice names {choice!r}, not offered")
                return
        try:
            model = await self.model()
        except (LocalModelError, MissingExtra, ValueError) as exc:
            yield ErrorEvent(message=f"local: {exc}")
            return
        temperature = self.temperature if options.temperature is None else options.temperature
        limit = options.max_tokens or spec.max_output_tokens or self.max_tokens
        seed = self.seed if self.seed is not None else int.from_bytes(os.urandom(4), "little")
        async with contextlib.AsyncExitStack() as stack:
            try:
                context = await stack.enter_async_context(model.lease())
            except LocalModelError as exc:  # no context could be made (out of memory, say)
                yield ErrorEvent(message=f"local: {exc}")
                return
            job = _Generation(model, context, max_tokens=limit, temperature=temperature, seed=seed)
            try:
                try:
                    await _trip(job.prepare, request, forced or tools, bool(forced))
                except _Overflow as exc:
                    yield ErrorEvent(
                        kind=ErrorKind.CONTEXT_OVERFLOW,
                        message=str(exc),
                        context_window=exc.window,
                    )
                    return
                except LocalModelError as exc:
                    yield ErrorEvent(message=f"local: {exc}")
                    return
                splitter = OutputSplitter(
                    tools=bool(tools), call_id=lambda n: f"call_{os.urandom(6).hex()}_{n}"
                )
                while not job.finished and not splitter.stopped:
                    try:
                        text = await _trip(job.step)
                    except LocalModelError as exc:
                        yield ErrorEvent(message=f"local: {exc}", usage=job.usage())
                        return
                    for event in splitter.feed(text):
                        yield event
                for event in splitter.finish():
                    yield event
            finally:
                job.close()
        stop = job.stop
        if splitter.calls and stop is StopReason.STOP:
            stop = StopReason.TOOL_USE
        yield Done(stop_reason=stop, usage=job.usage())
