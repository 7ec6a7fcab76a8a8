"""The public surface of agentloop_providers: complete, sorted, lazy, and not a core import."""

from __future__ import annotations

import subprocess
import sys

import agentloop_providers


def test_all_is_sorted_and_every_name_resolves() -> None:
    names = agentloop_providers.__all__
    assert names == sorted(names, key=lambda n: (not n.isupper(), n))
    for name in names:
        assert getattr(agentloop_providers, name) is not None
    assert set(names) <= set(dir(agentloop_providers))


def test_importing_the_package_or_the_core_loads_no_http_stack() -> None:
    code = (
        "import sys, agentloop, agentloop_providers\n"
        "assert 'httpx' not in sys.modules, 'httpx imported eagerly'\n"
        "agentloop_providers.AnthropicProvider\n"
        "assert 'httpx' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_core_never_imports_providers() -> None:
    code = "import sys, agentloop, agentloop.testing\nassert 'agentloop_providers' not in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True)
