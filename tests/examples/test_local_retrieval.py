"""The in-process retrieval example runs for real on SmolLM2-135M, under both backends."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from agentloop import AssistantMessage, StopReason, ToolResultMessage

from ..local.conftest import smollm2_path as smollm2_path  # noqa: F401 (the fixture)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "local_retrieval.py"
_spec = importlib.util.spec_from_file_location("agentloop_local_retrieval", EXAMPLE)
assert _spec is not None and _spec.loader is not None
example = importlib.util.module_from_spec(_spec)
sys.modules["agentloop_local_retrieval"] = example
_spec.loader.exec_module(example)

pytestmark = pytest.mark.anyio

QUESTIONS = [
    "Where are the spare house keys?",
    "When is the boiler serviced?",
    "What day is recycling?",
    "What is the wifi password?",
]


async def test_the_note_found_by_embeddings_reaches_the_model(smollm2_path: Path) -> None:
    out: list[str] = []
    result = await example.main("Where are the spare house keys?", write=out.append)
    first = result.messages[1]
    assert type(first) is AssistantMessage and first.stop_reason is StopReason.TOOL_USE
    assert first.tool_calls[0].name == "lookup"
    found = result.messages[2]
    assert type(found) is ToolResultMessage and not found.is_error
    assert out[0].startswith("lookup(") and out[-1].startswith("answer:")
    # The forced call's query is the model's; whatever it wrote, the tool answered with a note.
    assert found.content[0].text in example.NOTES  # type: ignore[union-attr]


async def test_embeddings_rank_the_matching_note_first(smollm2_path: Path) -> None:
    from agentloop_local import load_model

    model = await load_model("smollm2", context_window=2048)
    index = await example.Index.build(model, example.NOTES)
    for question, note in zip(QUESTIONS, example.NOTES, strict=True):
        assert await index.search(question) == note
