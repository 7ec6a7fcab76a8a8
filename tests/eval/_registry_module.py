"""A registry importable by module name (``tests.eval._registry_module:tools``)."""

from __future__ import annotations

from agentloop_eval import Registry

from ._helpers import get_weather

tools = Registry()
tools.tool(get_weather)
