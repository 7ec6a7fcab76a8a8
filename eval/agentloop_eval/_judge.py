"""An LLM as the judge: a model grades an answer against a rubric, through any ``StreamFn``.

The judge is shown the task, the tool calls the agent made (with their results, cut short) and
its final answer, and must answer ``PASS`` or ``FAIL`` on its first line, then say why. A judge
whose model call fails makes the run an error (the agent did nothing wrong); an answer with no
verdict fails the check.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agentloop import Agent, ModelSpec, StreamOptions

from ._matchers import Check

if TYPE_CHECKING:
    from agentloop.stream import StreamFn

    from ._trajectory import Trajectory

__all__ = ["JUDGE_SYSTEM_PROMPT", "LlmJudge"]

JUDGE_SYSTEM_PROMPT = (
    "You grade the work of an AI agent against a rubric. Read the task, the tools the agent "
    "called and its final answer. Reply with PASS or FAIL alone on the first line, then one "
    "line saying why."
)

_LEADING = re.compile(r"^\W*(PASS|FAIL)\b", re.I)
_ANYWHERE = re.compile(r"\b(PASS|FAIL)\b")  # elsewhere, only the words in capitals count


def judge_prompt(trajectory: Trajectory, rubric: str, *, result_chars: int = 300) -> str:
    """What the judge is asked about ``trajectory``."""
    lines = ["# Task", trajectory.prompt, "", "# Tool calls"]
    steps = list(trajectory.walk_tool_calls())
    for step in steps:
        result = step.result if len(step.result) <= result_chars else step.result[:result_chars]
        flag = " (error)" if step.is_error else ""
        lines.append(f"- {step.name}({step.arguments!r}) -> {result!r}{flag}")
    if not steps:
        lines.append("(none)")
    lines += ["", "# Final answer", trajectory.text, "", "# Rubric", rubric, ""]
    lines.append("Does the final answer meet the rubric? Reply PASS or FAIL, then say why.")
    return "\n".join(lines)


def parse_verdict(answer: str) -> bool | None:
    """``True`` for PASS, ``False`` for FAIL: the first word of the answer (any case, after
    punctuation such as ``**``), else the first of the two written in capitals anywhere;
    ``None`` when it says neither."""
    found = _LEADING.search(answer.strip()) or _ANYWHERE.search(answer)
    if found is None:
        return None
    return found.group(1).upper() == "PASS"


class LlmJudge:
    """Grade the final answer against ``rubric`` with a model.

    Args:
        model: the judge's model, as a model string or a ``ModelSpec``.
        rubric: what a passing answer does, in words.
        stream_fn: the provider to call (by default, the one the model string resolves to).
        stream_options: options of the judge's calls (``temperature=0``, say).
        system_prompt: the judge's instructions.
        name: how the check is named in reports.
    """

    def __init__(
        self,
        model: str | ModelSpec,
        *,
        rubric: str,
        stream_fn: StreamFn | None = None,
        stream_options: StreamOptions | None = None,
        system_prompt: str = JUDGE_SYSTEM_PROMPT,
        name: str = "judge",
    ) -> None:
        self.model = model
        self.rubric = rubric
        self.stream_fn = stream_fn
        self.stream_options = stream_options
        self.system_prompt = system_prompt
        self.name = name

    async def check(self, trajectory: Trajectory) -> Check:
        """Ask the judge.

        Raises:
            agentloop.ModelError: the judge's model call failed.
            agentloop.UnknownModel: the judge's model string resolves to no provider.
        """
        judge = Agent(
            model=self.model,
            stream_fn=self.stream_fn,
            name=self.name,
            system_prompt=self.system_prompt,
            stream_options=self.stream_options,
        )
        result = await judge.prompt(judge_prompt(trajectory, self.rubric))  # raises if it fails
        answer = result.text.strip()
        verdict = parse_verdict(answer)
        reason = answer.splitlines()[-1].strip() if answer else ""
        if verdict is None:
            return Check(name=self.name, passed=False, detail=f"no verdict in {answer[:200]!r}")
        return Check(name=self.name, passed=verdict, detail=reason, score=float(verdict))
