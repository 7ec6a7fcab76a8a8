"""Scripted models registered as providers, a registry with a couple of tools, suites in a line."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import agentloop as al
from agentloop.models import ResolvedModel, register_provider
from agentloop.testing import FunctionStream, ScriptedStream, reply_text, reply_tool_calls
from agentloop_eval import EvalCase, Registry, Suite, SuiteConfig

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from agentloop.stream import StreamFn
    from agentloop.testing import ScriptItem

__all__ = [
    "MODEL",
    "PRICED",
    "get_weather",
    "function_provider",
    "make_registry",
    "provider",
    "scripted_provider",
    "suite_of",
    "weather_script",
]

MODEL = al.ModelSpec(provider="scripted", model_id="demo")
PRICED = al.Pricing(input=1.0, output=2.0)  # per million tokens
_names = itertools.count(1)


@al.tool
async def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny, 21 C in {city}."


@al.tool
async def get_time(city: str) -> str:
    """The time in a city."""
    return f"It is noon in {city}."


def make_registry() -> Registry:
    registry = Registry()
    registry.tool(get_weather)
    registry.tool(get_time)
    return registry


def provider(make: Callable[[], StreamFn], *, pricing: al.Pricing | None = None) -> str:
    """Register a provider whose every resolution gets a fresh ``make()``; returns a model
    string for it (each call of this function registers a new provider name)."""
    name = f"evaltest{next(_names)}"

    def factory(model_id: str) -> ResolvedModel:
        spec = al.ModelSpec(provider=name, model_id=model_id, pricing=pricing)
        return ResolvedModel(spec, make())

    register_provider(name, factory)
    return f"{name}:model"


def scripted_provider(script: Sequence[ScriptItem], **options: Any) -> str:
    """A provider playing ``script`` afresh for each run."""
    return provider(lambda: ScriptedStream(list(script), **options))


def function_provider(fn: Callable[[al.stream.LlmContext], Any]) -> str:
    return provider(lambda: FunctionStream(fn))


def weather_script(city: str = "Paris") -> list[ScriptItem]:
    return [
        reply_tool_calls(("get_weather", {"city": city}), usage=al.Usage(input=10, output=5)),
        reply_text(f"Sunny, 21 C in {city}.", usage=al.Usage(input=20, output=8)),
    ]


def suite_of(
    *cases: EvalCase,
    model: str | None = None,
    registry: Registry | None = None,
    root: Path | None = None,
    **config: Any,
) -> Suite:
    settings = SuiteConfig(name="test", model=model, **config)
    suite = Suite(config=settings, cases=list(cases), registry=registry or make_registry())
    if root is not None:
        suite.root = root
    return suite
