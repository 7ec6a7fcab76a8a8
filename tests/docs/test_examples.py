"""Every Python example in README.md and docs/ runs, page by page, as written.

A page's ``python`` blocks run in order in one namespace (a page reads as one script). Examples
that name a real provider (``Agent(model="anthropic:...")``) run against fake provider APIs on
127.0.0.1 (``_fake_apis``): the environment points each provider's base URL there and gives it
a key, as a user's environment would name the real ones.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ._fake_apis import ANSWER, FakeApis, running_fake_apis

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


# What some pages' examples print, so a page that runs but does the wrong thing fails too.
PRINTS = {
    "README.md": [
        ANSWER,
        "AgentEnd",
        "12\n",
        "Twelve, streamed.",
        "Tuesday.",
        "outside",
        "HELLO THERE",
    ],
    "docs/index.md": [ANSWER, "2 + 3 = 5"],
    "docs/concurrency.md": ["tool call aborted: the run was cancelled"],
    "docs/output.md": ["Person(name='Ada', age=36)", "['Ada', 'Grace']"],
    "docs/sessions.md": ["Tuesday. 4", "and then?", "Then this."],
    "docs/steering.md": [
        "ToolResultMessage tool call cancelled: user requested steering interrupt",
        "UserMessage Forget the slow one.",
        "summary",
    ],
    "docs/streaming.md": ["[lookup: kitten: a small cat]", "Just tex|t"],
    "docs/tools.md": ["'minimum': 1", "2.5"],
    "docs/multi-agent.md": [
        "start  researcher When are the tides",
        "inner tool web_search in researcher",
        "tokens over the tree: 560",
        "['triage', 'billing'] Refund issued.",
        "a finished | b read: hello",
        "AHOY!!",
    ],
    "docs/policies.md": ["tool call skipped: deleting is not allowed here", "fine", "ok"],
    "docs/observability.md": [
        "invoke_agent helper 23\n  chat gpt-4o-mini 14\n  execute_tool lookup",
        "'gen_ai.client.operation.time_to_first_chunk', 'gen_ai.client.token.usage'",
        '"content":"Say hello."',
        "lookup({'term': 'puppy'}) ok",
    ],
    "docs/local-models.md": ["smollm2 True", "locating ready 2048", "Stock prices fell sharply."],
    "docs/providers.md": [
        "openai gpt-4o-mini",
        ANSWER,
        "the upstream said: *** is not valid\nAuthorization: Bearer ***\n",
    ],
    "docs/quickstart.md": [
        "{'type': 'integer', 'minimum': 1, 'maximum': 7",
        "Sunny in Lisbon tomorrow, 24 °C.\nLisbon: sunny, 24° celsius (in 1 day(s))",
        "(calls a tool)\n[forecast: Oslo: snow, -3° celsius (in 1 day(s))]\nSnow in Oslo",
        "Weather(city='Lisbon', sky='sunny', celsius=24)",
        "StreamError auth invalid x-api-key\nFalse auth invalid x-api-key",
        f"{ANSWER}\nTrue\n{ANSWER}\n",
    ],
    "docs/troubleshooting.md": [f"{ANSWER}\n", "Finally.\n"],
    "docs/testing.md": ["anthropic claude-sonnet-4-5"],
    "docs/upgrade.md": [
        "failed: auth invalid x-api-key",
        "agentloop.run_loop moved to agentloop.loop.run_loop",
    ],
    "docs/writing-a-provider.md": [
        "HELLO THERE",
        "kitten: a young cat | Done.",
        ANSWER,
        "tiny says hi",
        "Say hello in a few words.",
    ],
    "docs/providers/index.md": [f"1048576 {ANSWER}"],
    "docs/providers/anthropic.md": [
        "200000 64000",
        "{'type': 'enabled', 'budget_tokens': 8192} {'type': 'auto'}",
    ],
    "docs/providers/openai.md": [
        f"{ANSWER}\n{ANSWER}\n",
        "{'effort': 'high', 'summary': 'auto'} ['reasoning.encrypted_content'] False",
    ],
    "docs/providers/azure.md": [f"{ANSWER}\n{ANSWER}\n"],
    "docs/providers/gemini.md": [
        ANSWER,
        "{'mode': 'ANY', 'allowedFunctionNames': ['weather']}} "
        "{'includeThoughts': True, 'thinkingBudget': 2048}",
    ],
    "docs/providers/mistral.md": [ANSWER, "tBziUm3pE Abc123xyz"],
    "docs/providers/xai.md": [ANSWER, "grok-3-mini high\ngrok-4 None"],
    "docs/providers/bedrock.md": [f"200000 {ANSWER}", "300000"],
    "docs/providers/gateways.md": [
        f"{ANSWER}\n128000 {ANSWER}",
        "anthropic/claude-sonnet-4.5 200000",
    ],
    "docs/providers/llamacpp.md": [f"8192 {ANSWER}", "'response_format', 'stream'", "json_schema"],
    "docs/providers/ollama.md": [ANSWER, "True {'num_predict': 512, 'num_ctx': 32768}"],
    "docs/providers/vllm.md": [f"32768 {ANSWER}"],
    "docs/providers/lmstudio.md": [ANSWER],
    "docs/providers/local.md": ["local True"],
    "docs/temporal.md": ["AgentStart\nTurnStart", "ToolExecutionEnd", "AgentEnd\n2 + 3 = 5"],
}


def python_blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text())


@pytest.fixture(scope="module")
def fake_apis() -> Iterator[FakeApis]:
    with running_fake_apis() as apis:
        yield apis


@pytest.mark.parametrize(
    "page", [p for p in PAGES if python_blocks(p)], ids=lambda p: str(p.relative_to(ROOT))
)
def test_the_pages_examples_run(
    page: Path,
    fake_apis: FakeApis,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in fake_apis.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # examples may write files (sessions, databases)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for number, block in enumerate(python_blocks(page), 1):
        code = compile(block, f"{page.relative_to(ROOT)} (example {number})", "exec")
        exec(code, namespace)
    printed = capsys.readouterr().out
    for expected in PRINTS.get(str(page.relative_to(ROOT)), []):
        assert expected in printed, (expected, printed)


def test_every_page_with_code_is_checked() -> None:
    # The collection above skips pages without Python; make sure that is all it skips.
    with_code = [p for p in PAGES if "```python" in p.read_text()]
    assert with_code == [p for p in PAGES if python_blocks(p)]
    assert len(with_code) >= 8
