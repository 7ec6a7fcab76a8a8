"""The ``local`` model strings: ``local:smollm2``, ``local:/path/to/model.gguf``.

``pyproject.toml`` declares ``local`` in the ``agentloop.providers`` entry-point group, so
``Agent(model="local:smollm2")`` (and ``agentloop run -m local:smollm2``) finds it without the
core importing this package. Resolving loads nothing: the model loads on the first call, once
per process. A query sets the context window: ``local:smollm2?context_window=2048``.
"""

from __future__ import annotations

import urllib.parse

from agentloop import ModelSpec, UnknownModel
from agentloop.models import ResolvedModel

from ._native import runtime_available
from ._presets import presets
from ._provider import LocalProvider

__all__ = ["local", "parse_model_id"]

_DEFAULT_WINDOW = 4096


def parse_model_id(model_id: str) -> tuple[str, int | None]:
    """The source and the ``context_window`` a local model id names.

    Raises:
        ValueError: the query is not ``context_window=<positive integer>``.
    """
    source, _, query = model_id.partition("?")
    window: int | None = None
    if query:
        fields = urllib.parse.parse_qs(query, keep_blank_values=True, strict_parsing=True)
        unknown = set(fields) - {"context_window"}
        if unknown:
            raise ValueError(f"unknown model string option(s): {', '.join(sorted(unknown))}")
        raw = fields["context_window"][-1]
        if not raw.isdigit() or int(raw) < 1:
            raise ValueError(f"context_window must be a positive integer, not {raw!r}")
        window = int(raw)
    return source, window


def local(model_id: str) -> ResolvedModel:
    """The ``ResolvedModel`` for ``local:<model_id>``.

    Raises:
        UnknownModel: the model id's query is malformed.
        ModuleNotFoundError: llama-cpp-python (the ``[local]`` extra) is not installed;
            ``resolve_model`` turns it into an ``UnknownModel`` that names the extra.
    """
    if not runtime_available():
        raise ModuleNotFoundError("No module named 'llama_cpp'", name="llama_cpp")
    try:
        source, window = parse_model_id(model_id)
    except ValueError as exc:
        raise UnknownModel(f"local:{model_id}: {exc}") from None
    preset = presets().get(source)
    spec_window = window or (preset.context_window if preset else _DEFAULT_WINDOW)
    spec = ModelSpec(provider="local", model_id=source, context_window=spec_window)
    return ResolvedModel(spec=spec, stream_fn=LocalProvider(source, context_window=spec_window))
