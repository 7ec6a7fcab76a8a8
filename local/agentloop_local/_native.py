"""The one place that touches llama.cpp: its C API through llama-cpp-python's ``llama_cpp``.

``llama_cpp`` mirrors ``llama.h`` function for function (ctypes), so this module reads like the
C API: a ``NativeModel`` owns the weights (memory-mapped, loaded once), each ``NativeContext``
owns a KV cache over them, and a ``Sampler`` is a llama.cpp sampler chain, with a GBNF grammar
when the output must follow one. Nothing here is async and nothing here is thread-safe: the
callers (``_models``) hand one context to one worker thread at a time.

The binding is imported on first use, not at ``import agentloop_local``: importing it loads the
shared library, which costs a few hundred milliseconds.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
from typing import TYPE_CHECKING, Any

from agentloop import MissingExtra

from ._errors import LocalModelError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["NativeContext", "NativeModel", "Sampler", "binding", "runtime_available"]

_binding: Any = None
_binding_lock = threading.Lock()
_keep: list[Any] = []  # ctypes callbacks that C holds for the life of the process


def runtime_available() -> bool:
    """Whether llama-cpp-python (the ``[local]`` extra) is installed; nothing is loaded."""
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):  # a broken install, or a finder that refuses it
        return False


def binding() -> Any:
    """The ``llama_cpp`` module, imported and initialised once, with llama.cpp's log silenced.

    Raises:
        MissingExtra: llama-cpp-python is not installed (the ``[local]`` extra).
    """
    global _binding
    with _binding_lock:
        if _binding is None:
            try:
                import llama_cpp
            except ImportError as exc:
                raise MissingExtra(
                    "in-process models (agentloop_local)", "local", missing="llama_cpp"
                ) from exc

            # llama.cpp writes every load step to stderr; an application decides what to show.
            @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
            def _quiet(level: int, text: bytes, data: Any) -> None:
                pass

            _keep.append(_quiet)
            llama_cpp.llama_log_set(_quiet, ctypes.c_void_p(0))
            llama_cpp.llama_backend_init()
            _binding = llama_cpp
        return _binding


def _threads() -> int:
    return max(1, os.cpu_count() or 1)


class NativeModel:
    """The weights of one GGUF file, memory-mapped, and what its metadata says."""

    def __init__(
        self,
        path: str,
        *,
        on_progress: Callable[[float], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        mmap: bool = True,
    ) -> None:
        """Load ``path``; ``on_progress`` gets the fraction loaded (0 to 1), from this thread,
        and ``should_stop`` returning true stops the load (at its next step).

        Raises:
            LocalModelError: the file cannot be loaded (missing, not a GGUF, unsupported).
        """
        lib = binding()
        self._lib = lib
        self.path = path
        params = lib.llama_model_default_params()
        params.use_mmap = mmap
        stopped = False

        @lib.llama_progress_callback  # type: ignore[untyped-decorator]
        def _progress(fraction: float, data: Any) -> bool:
            nonlocal stopped
            if on_progress is not None:
                try:
                    on_progress(min(1.0, max(0.0, float(fraction))))
                except Exception:  # noqa: BLE001 (a failing observer must not stop the load)
                    pass
            stopped = should_stop is not None and should_stop()
            return not stopped

        params.progress_callback = _progress
        handle = lib.llama_model_load_from_file(path.encode(), params)
        if not handle:
            if stopped:
                raise LocalModelError(f"loading {path!r} was stopped")
            raise LocalModelError(f"llama.cpp could not load {path!r} (not a supported GGUF?)")
        self.handle = handle
        self.vocab = lib.llama_model_get_vocab(handle)
        self.n_ctx_train: int = lib.llama_model_n_ctx_train(handle)
        self.n_embd: int = lib.llama_model_n_embd(handle)
        self.size_bytes: int = lib.llama_model_size(handle)
        template = lib.llama_model_chat_template(handle, None)
        self.chat_template: str | None = template.decode("utf-8", "replace") if template else None
        self.bos = self._special_text(lib.llama_vocab_bos(self.vocab))
        self.eos = self._special_text(lib.llama_vocab_eos(self.vocab))
        self.adds_bos = bool(lib.llama_vocab_get_add_bos(self.vocab))
        self._piece_buffer = ctypes.create_string_buffer(256)

    def metadata(self, key: str) -> str | None:
        """A GGUF metadata value as text (``general.name``, ...), or ``None``."""
        buf = ctypes.create_string_buffer(4096)
        n = self._lib.llama_model_meta_val_str(self.handle, key.encode(), buf, len(buf))
        return None if n < 0 else buf.value.decode("utf-8", "replace")

    def _special_text(self, token: int) -> str:
        if token < 0:
            return ""
        buf = ctypes.create_string_buffer(64)
        n = self._lib.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, True)
        return buf.raw[: max(0, n)].decode("utf-8", "replace")

    def tokenize(self, text: str, *, special: bool = True) -> list[int]:
        """The tokens of ``text``; ``special`` parses control tokens (``<|im_start|>``...)."""
        data = text.encode("utf-8")
        capacity = len(data) + 8
        out = (self._lib.llama_token * capacity)()
        n = self._lib.llama_tokenize(self.vocab, data, len(data), out, capacity, False, special)
        if n < 0:  # the buffer was too small: -n is the size needed
            capacity = -n
            out = (self._lib.llama_token * capacity)()
            n = self._lib.llama_tokenize(self.vocab, data, len(data), out, capacity, False, special)
        return list(out[:n])

    def piece(self, token: int) -> bytes:
        """The bytes of one token as text (control tokens render as nothing)."""
        buf = self._piece_buffer
        n = self._lib.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, False)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self._lib.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, False)
        return buf.raw[:n]

    def is_end(self, token: int) -> bool:
        """Whether ``token`` ends generation (end of sequence or of turn)."""
        return bool(self._lib.llama_vocab_is_eog(self.vocab, token))

    def new_context(
        self, n_ctx: int, *, embeddings: bool = False, threads: int | None = None
    ) -> NativeContext:
        """A fresh context (KV cache) of ``n_ctx`` tokens over these weights.

        Raises:
            LocalModelError: llama.cpp could not allocate it.
        """
        return NativeContext(self, n_ctx, embeddings=embeddings, threads=threads or _threads())

    def close(self) -> None:
        """Free the weights (every context over them must be closed first)."""
        handle, self.handle = self.handle, None
        if handle:
            self._lib.llama_model_free(handle)


class NativeContext:
    """One KV cache over a model; remembers the tokens it holds so a prefix is reused."""

    def __init__(self, model: NativeModel, n_ctx: int, *, embeddings: bool, threads: int) -> None:
        lib = model._lib
        self._lib = lib
        self.model = model
        params = lib.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_threads = threads
        params.n_threads_batch = threads
        if embeddings:
            # One ubatch holds a whole text: encoder models cannot split an input.
            params.n_batch = params.n_ubatch = n_ctx
            params.embeddings = True
            if lib.llama_model_has_encoder(model.handle) or not lib.llama_model_has_decoder(
                model.handle
            ):
                params.pooling_type = lib.LLAMA_POOLING_TYPE_UNSPECIFIED
            else:  # a decoder (a chat model) embeds by the mean of its last hidden states
                params.pooling_type = lib.LLAMA_POOLING_TYPE_MEAN
        handle = lib.llama_init_from_model(model.handle, params)
        if not handle:
            raise LocalModelError(f"llama.cpp could not create a context of {n_ctx} tokens")
        self.handle = handle
        self.n_ctx: int = lib.llama_n_ctx(handle)
        self.n_batch: int = lib.llama_n_batch(handle)
        self.tokens: list[int] = []  # what the KV cache holds, in order
        self._abort: Callable[[], bool] | None = None

        @lib.ggml_abort_callback  # type: ignore[untyped-decorator]
        def _abort(data: Any) -> bool:
            check = self._abort
            if check is None:
                return False
            try:
                return bool(check())
            except BaseException:  # noqa: BLE001 (nothing may cross back into C; stop is safe)
                return True

        self._abort_callback = _abort
        lib.llama_set_abort_callback(handle, _abort, None)

    def set_abort(self, check: Callable[[], bool] | None) -> None:
        """Make ``check`` (called between the steps of a decode) able to stop a decode."""
        self._abort = check

    def reuse_prefix(self, tokens: Sequence[int]) -> int:
        """Keep the longest prefix of ``tokens`` the cache already holds (at least one token is
        left to decode, for fresh logits); returns how many are kept."""
        held = self.tokens
        limit = min(len(held), len(tokens) - 1)
        common = 0
        while common < limit and held[common] == tokens[common]:
            common += 1
        memory = self._lib.llama_get_memory(self.handle)
        if common < len(held) and not self._lib.llama_memory_seq_rm(memory, 0, common, -1):
            self._lib.llama_memory_clear(memory, True)
            common = 0
        del held[common:]
        return common

    def clear(self) -> None:
        """Forget everything the cache holds."""
        self._lib.llama_memory_clear(self._lib.llama_get_memory(self.handle), True)
        self.tokens.clear()

    def decode(self, tokens: Sequence[int]) -> None:
        """Append ``tokens`` to the cache (one ``n_batch`` chunk per call of llama.cpp).

        Raises:
            LocalModelError: llama.cpp failed, or the abort check stopped it (``aborted``).
        """
        lib = self._lib
        step = max(1, self.n_batch)
        for start in range(0, len(tokens), step):
            chunk = tokens[start : start + step]
            array = (lib.llama_token * len(chunk))(*chunk)
            code = lib.llama_decode(self.handle, lib.llama_batch_get_one(array, len(chunk)))
            if code != 0:
                # The cache may hold part of the chunk now: start afresh next time.
                self.clear()
                what = "aborted" if code == 2 else f"failed (llama_decode returned {code})"
                raise LocalModelError(f"llama.cpp decoding {what}")
            self.tokens.extend(chunk)

    def embedding(self) -> list[float]:
        """The pooled embedding of the sequence just decoded.

        Raises:
            LocalModelError: the context was not made for embeddings.
        """
        lib = self._lib
        pointer = lib.llama_get_embeddings_seq(self.handle, 0)
        if not pointer:
            pointer = lib.llama_get_embeddings_ith(self.handle, -1)
        if not pointer:
            raise LocalModelError("this context produces no embeddings")
        return list(pointer[: self.model.n_embd])

    def close(self) -> None:
        """Free the cache."""
        handle, self.handle = self.handle, None
        if handle:
            self._lib.llama_free(handle)


class Sampler:
    """A llama.cpp sampler chain: a grammar (when given) first, then top-k, top-p and either
    greedy choice (temperature 0) or a seeded draw at ``temperature``."""

    def __init__(
        self,
        model: NativeModel,
        *,
        temperature: float,
        seed: int,
        grammar: str | None = None,
        lazy_patterns: Sequence[str] = (),
    ) -> None:
        """Raises:
        LocalModelError: llama.cpp rejected the grammar.
        """
        lib = model._lib
        self._lib = lib
        self.handle = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        if grammar is not None:
            if lazy_patterns:
                patterns = (ctypes.c_char_p * len(lazy_patterns))(
                    *(p.encode() for p in lazy_patterns)
                )
                constraint = lib.llama_sampler_init_grammar_lazy_patterns(
                    model.vocab, grammar.encode(), b"root", patterns, len(lazy_patterns), None, 0
                )
            else:
                constraint = lib.llama_sampler_init_grammar(model.vocab, grammar.encode(), b"root")
            if not constraint:
                self.close()
                raise LocalModelError("llama.cpp rejected the output grammar")
            lib.llama_sampler_chain_add(self.handle, constraint)
        if temperature <= 0:
            lib.llama_sampler_chain_add(self.handle, lib.llama_sampler_init_greedy())
        else:
            lib.llama_sampler_chain_add(self.handle, lib.llama_sampler_init_top_k(40))
            lib.llama_sampler_chain_add(self.handle, lib.llama_sampler_init_top_p(0.95, 1))
            lib.llama_sampler_chain_add(self.handle, lib.llama_sampler_init_temp(temperature))
            lib.llama_sampler_chain_add(self.handle, lib.llama_sampler_init_dist(seed))

    def sample(self, context: NativeContext) -> int:
        """The next token after what ``context`` decoded last (accepted into the grammar)."""
        return int(self._lib.llama_sampler_sample(self.handle, context.handle, -1))

    def close(self) -> None:
        """Free the chain (and the grammar in it)."""
        handle, self.handle = self.handle, None
        if handle:
            self._lib.llama_sampler_free(handle)
