"""Model strings: ``Agent(model="provider:model-id")`` and the registry providers fill.

``agentloop_providers`` registers its providers through the ``agentloop.providers`` entry-point
group; another package can do the same, or call ``register_provider`` at run time.
"""

from ._errors import UnknownModel as UnknownModel
from ._models import (
    ENTRY_POINT_GROUP as ENTRY_POINT_GROUP,
    ProviderFactory as ProviderFactory,
    ResolvedModel as ResolvedModel,
    register_provider as register_provider,
    registered_providers as registered_providers,
    resolve_model as resolve_model,
    split_model_string as split_model_string,
)
from ._public import publish

__all__ = [
    "ENTRY_POINT_GROUP",
    "ProviderFactory",
    "ResolvedModel",
    "UnknownModel",
    "register_provider",
    "registered_providers",
    "resolve_model",
    "split_model_string",
]

publish(__name__, globals(), __all__, force=False)
del publish
