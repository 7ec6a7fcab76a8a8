"""Errors of in-process models, under the core's ``AgentError``::

    AgentError
    └── LocalModelError          a local model cannot be found, loaded or run
        └── UnknownLocalModel    (also LookupError) no preset, file or package by that name

Failures of a model call are not raised: the provider ends its stream with an error event, as
every provider does. These are for what the application asks directly (loading, embedding).
"""

from __future__ import annotations

from agentloop import AgentError

__all__ = ["LocalModelError", "UnknownLocalModel"]


class LocalModelError(AgentError):
    """A local model cannot be found, loaded or run."""


class UnknownLocalModel(LocalModelError, LookupError):
    """No preset, GGUF file or installed model package goes by that name."""
