"""Secrets: what the library keeps out of everything it writes.

Text from outside is redacted where it enters (a provider's error, a model call's failure) and
again where the library writes (session records, evaluation reports and cassettes, span
statuses), against every API key the process has configured — those the providers checked
(passed in code, from ``get_api_key`` such as a keyring entry, from the environment), the
values of every provider's environment variable and of any variable named like a secret — and
against well-known key shapes (``sk-...``, ``sk-ant-...``, ``AKIA...``, the token after
``Bearer``...). Register other credentials of your own with ``register_secret``.
"""

from ._public import publish
from ._redaction import (
    redact as redact,
    redact_bytes as redact_bytes,
    register_secret as register_secret,
    register_secret_variable as register_secret_variable,
)

__all__ = ["redact", "redact_bytes", "register_secret", "register_secret_variable"]

publish(__name__, globals(), __all__, force=False)
del publish
