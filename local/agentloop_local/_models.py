"""Loaded models: one load per process per file, shared by every agent that uses it.

``await load_model("smollm2")`` finds the GGUF (a preset's package or a path), loads it in a
worker thread — memory-mapped, so the weights are paged in from the file and shared with any
other process that maps it — and reports progress as ``LoadProgress`` events on the event
loop's thread. A second load of the same file, from any task, thread or event loop, gets the
same weights: loading is keyed by the file's real path.

Generation needs a context (a KV cache) of its own. A ``LocalModel`` keeps a pool of at most
``max_contexts`` of them, created on first need. Callers lease one (``lease()``); when all are
busy they queue, first come first served. The default is a single context, a queue: on a CPU
two generations at once share the same cores, so they finish no sooner in total (see
benchmarks/local_inference.py for the figures) and each context costs its KV cache.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel
import anyio.to_thread
import msgspec

from ._errors import LocalModelError
from ._native import NativeContext, NativeModel
from ._presets import ModelPreset, resolve_source
from ._template import ChatTemplate

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence

__all__ = ["LoadProgress", "LocalModel", "load_model", "load_model_sync"]

_WAIT_SLICE = 0.05  # seconds a worker waits on another event loop's lease between checks
_DEFAULT_WINDOW = 4096  # a file without a preset: the window unless the model string says


class LoadProgress(msgspec.Struct, frozen=True, kw_only=True):
    """How far loading a model has come.

    ``stage`` is ``locating`` (finding the file; a split model is assembled here, once),
    ``loading`` (``fraction`` of the weights mapped) or ``ready``.
    """

    model: str
    stage: Literal["locating", "loading", "ready"]
    fraction: float = 0.0
    path: str | None = None


_weights: dict[str, NativeModel] = {}
_models: dict[tuple[str, int], LocalModel] = {}
_registry_lock = threading.Lock()
_path_locks: dict[str, threading.Lock] = {}


def _cancelled() -> bool:
    """In a worker thread: whether the task waiting for it was cancelled."""
    try:
        anyio.from_thread.check_cancelled()
    except RuntimeError:  # not a worker thread of an event loop
        return False
    except BaseException:  # noqa: BLE001 (the backend's cancellation exception)
        return True
    return False


def raise_if_cancelled() -> None:
    """In a worker thread: raise the cancellation of the task waiting for it, if it was
    cancelled. Elsewhere (plain synchronous code): nothing."""
    try:
        anyio.from_thread.check_cancelled()
    except RuntimeError:  # not a worker thread of an event loop: nobody to cancel it
        pass


def _acquire(lock: threading.Lock | threading.Semaphore) -> None:
    """Acquire, giving up when the task a worker thread runs for is cancelled."""
    while not lock.acquire(timeout=_WAIT_SLICE):
        raise_if_cancelled()


class LocalModel:
    """A loaded GGUF model and its pool of generation contexts. Get one from ``load_model``.

    Attributes:
        name: the preset's name, or the file's name.
        path: the GGUF file.
        preset: the preset, when the model came from one.
        context_window: the tokens each context holds.
        max_contexts: how many generations may run at once (more wait their turn).
        size_bytes: the weights' size.
        trained_context: the longest context the model was trained on.
        template: the model's chat template (from the GGUF).
    """

    def __init__(
        self,
        native: NativeModel,
        *,
        name: str,
        preset: ModelPreset | None,
        context_window: int,
        max_contexts: int,
    ) -> None:
        self.native = native
        self.name = name
        self.path = native.path
        self.preset = preset
        self.context_window = context_window
        self.max_contexts = max_contexts
        self.size_bytes = native.size_bytes
        self.trained_context = native.n_ctx_train
        source = native.chat_template or (preset.chat_template if preset else None)
        self.template = ChatTemplate(source, bos=native.bos, eos=native.eos)
        self._slots = threading.Semaphore(max_contexts)
        self._free: list[NativeContext] = []
        self._pool_lock = threading.Lock()
        self._embed_lock = threading.Lock()
        self._embedder: NativeContext | None = None
        # One FIFO queue per event loop in front of the slots: a task waits there, cancellable,
        # rather than in a worker thread.
        self._queues: weakref.WeakKeyDictionary[Any, anyio.Semaphore] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return (
            f"LocalModel(name={self.name!r}, context_window={self.context_window}, "
            f"max_contexts={self.max_contexts})"
        )

    def _queue(self) -> anyio.Semaphore:
        loop = anyio.lowlevel.current_token().native_token
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = anyio.Semaphore(self.max_contexts)
        return queue

    def _take(self) -> NativeContext:
        _acquire(self._slots)
        try:
            with self._pool_lock:
                if self._free:
                    return self._free.pop()
            return self.native.new_context(self.context_window)
        except BaseException:
            self._slots.release()
            raise

    def _give(self, context: NativeContext) -> None:
        context.set_abort(None)
        with self._pool_lock:
            self._free.append(context)
        self._slots.release()

    @contextlib.asynccontextmanager
    async def lease(self) -> AsyncIterator[NativeContext]:
        """A generation context for the duration of the block; waits for a free one.

        The context is used from one worker thread at a time, never concurrently.
        """
        async with self._queue():
            context = await anyio.to_thread.run_sync(self._take)
            try:
                yield context
            finally:
                self._give(context)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One embedding per text (L2-normalised), computed in a worker thread.

        Made for embedding models; a chat model embeds too, by the mean of its last hidden
        states, which is good enough for a demonstration and little more.

        Raises:
            LocalModelError: a text does not fit the context window, or llama.cpp failed.
        """
        return await anyio.to_thread.run_sync(self._embed_all, list(texts))

    def _embed_all(self, texts: list[str]) -> list[list[float]]:
        _acquire(self._embed_lock)
        try:
            if self._embedder is None:
                self._embedder = self.native.new_context(self.context_window, embeddings=True)
            context = self._embedder
            context.set_abort(_cancelled)
            out = []
            for text in texts:
                raise_if_cancelled()
                tokens = self.native.tokenize(text, special=False) or [0]
                if len(tokens) > context.n_ctx:
                    raise LocalModelError(
                        f"a text of {len(tokens)} tokens does not fit the context of "
                        f"{context.n_ctx}"
                    )
                context.clear()
                context.decode(tokens)
                out.append(_normalised(context.embedding()))
            return out
        finally:
            self._embed_lock.release()


def _normalised(vector: list[float]) -> list[float]:
    norm = sum(v * v for v in vector) ** 0.5
    return [v / norm for v in vector] if norm > 0 else vector


def _weights_for(path: str, on_progress: Callable[[float], None] | None) -> NativeModel:
    with _registry_lock:
        lock = _path_locks.setdefault(path, threading.Lock())
    _acquire(lock)  # a second load of the same file waits for the first, then shares it
    try:
        native = _weights.get(path)
        if native is None:
            native = NativeModel(path, on_progress=on_progress, should_stop=_cancelled)
            _weights[path] = native
        return native
    finally:
        lock.release()


def load_model_sync(
    source: str,
    *,
    context_window: int | None = None,
    max_contexts: int = 1,
    on_progress: Callable[[LoadProgress], None] | None = None,
) -> LocalModel:
    """Load ``source`` (a preset name or a GGUF path), or return it if loaded already.

    Blocks; from async code use ``load_model``. ``on_progress`` is called from this thread.

    Args:
        source: ``smollm2``, ``gemma3-270m`` or a path to a ``.gguf`` file.
        context_window: tokens per context; the preset's (else 4096) when omitted.
        max_contexts: generations that may run at once (only for the first load of this
            model with this window; later loads share it).
        on_progress: receives ``LoadProgress`` events.

    Raises:
        UnknownLocalModel: no preset or file by that name.
        LocalModelError: the preset's package is not installed, or the file cannot be loaded.
        MissingExtra: llama-cpp-python (the ``[local]`` extra) is not installed.
        ValueError: ``context_window`` or ``max_contexts`` is not positive.
    """
    if max_contexts < 1 or (context_window is not None and context_window < 1):
        raise ValueError("context_window and max_contexts must be positive")

    def report(stage: Any, fraction: float, path: str | None = None) -> None:
        if on_progress is not None:
            on_progress(LoadProgress(model=source, stage=stage, fraction=fraction, path=path))

    report("locating", 0.0)
    found, preset = resolve_source(source)
    path = os.path.realpath(found)
    window = context_window or (preset.context_window if preset else _DEFAULT_WINDOW)
    key = (path, window)
    with _registry_lock:
        model = _models.get(key)
    if model is None:
        native = _weights_for(path, lambda f: report("loading", f, path))
        with _registry_lock:
            model = _models.get(key)
            if model is None:
                name = preset.name if preset else os.path.basename(path)
                model = LocalModel(
                    native,
                    name=name,
                    preset=preset,
                    context_window=min(window, native.n_ctx_train or window),
                    max_contexts=max_contexts,
                )
                _models[key] = model
    report("ready", 1.0, path)
    return model


async def load_model(
    source: str,
    *,
    context_window: int | None = None,
    max_contexts: int = 1,
    on_progress: Callable[[LoadProgress], None] | None = None,
) -> LocalModel:
    """Load ``source`` in a worker thread (see ``load_model_sync`` for the arguments).

    ``on_progress`` is called on the event loop's thread; cancelling stops the load at its
    next progress step.

    Raises:
        UnknownLocalModel: no preset or file by that name.
        LocalModelError: the preset's package is not installed, or the file cannot be loaded.
        ValueError: ``context_window`` or ``max_contexts`` is not positive.
    """
    relay: Callable[[LoadProgress], None] | None = None
    if on_progress is not None:
        callback = on_progress

        def relay(event: LoadProgress) -> None:
            anyio.from_thread.run_sync(callback, event)

    try:
        return await anyio.to_thread.run_sync(
            lambda: load_model_sync(
                source, context_window=context_window, max_contexts=max_contexts, on_progress=relay
            )
        )
    except LocalModelError:
        await anyio.lowlevel.checkpoint_if_cancelled()  # stopped because we were cancelled
        raise
