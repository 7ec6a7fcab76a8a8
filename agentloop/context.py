"""Context management: keeping each request inside the model's context window.

``SlidingWindow`` keeps the first user message and the newest messages within a token budget,
never splitting a tool call from its results; ``SummarizingCompactor`` asks a model for a
summary of what it drops. Both are ``transform_context`` hooks (``Agent(transform_context=...)``).
"""

from ._abc import TokenCounter as TokenCounter
from ._config import TransformContext as TransformContext
from ._context import (
    Compaction as Compaction,
    EstimatingCounter as EstimatingCounter,
    SlidingWindow as SlidingWindow,
    SummarizingCompactor as SummarizingCompactor,
    compact_messages as compact_messages,
    estimate_tokens as estimate_tokens,
)
from ._public import publish

__all__ = [
    "Compaction",
    "EstimatingCounter",
    "SlidingWindow",
    "SummarizingCompactor",
    "TokenCounter",
    "TransformContext",
    "compact_messages",
    "estimate_tokens",
]

publish(__name__, globals(), __all__, force=False)
del publish
