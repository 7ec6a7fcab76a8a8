"""ToolDenyList and ToolAllowList: exact names, globs, case and Unicode edge cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from agentloop.policy import Allow, Skip
from agentloop.testing import reply_text, reply_tool_calls
from agentloop_policies import ToolAllowList, ToolDenyList, ToolPatterns

from ._helpers import Recorder, dispatch_ctx, run, seen_by_model, tool_results

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("patterns", "name", "expected"),
    [
        (["bash"], "bash", True),
        (["bash"], "bash_history", False),
        (["bash"], "Bash", True),
        (["bash"], "BASH ", True),
        (["bash"], "\uff42\uff41\uff53\uff48", True),  # full-width letters fold under NFKC
        (["mcp__*"], "mcp__github__push", True),
        (["mcp__*"], "mcp_", False),
        (["*"], "", True),
        (["*"], "anything", True),
        (["read_?"], "read_a", True),
        (["read_?"], "read_ab", False),
        (["read_[ab]"], "read_b", True),
        (["read_[!ab]"], "read_b", False),
        (["read_[!ab]"], "read_c", True),
        (["tool[1]"], "tool[1]", True),  # the literal name always matches itself
        (["tool[1]"], "tool1", True),
        (["a[*]b"], "a*b", True),
        (["a[*]b"], "axb", False),
        (["x["], "x[", True),  # an unclosed bracket is a literal
        (["*shell*"], "run_shell_command", True),
        (["*shell*"], "she_ll", False),
        (["a*"], "b\na", False),
        (["*a"], "b\na", True),  # '*' crosses newlines; names never hold any anyway
    ],
)
def test_pattern_matching(patterns: list[str], name: str, expected: bool) -> None:
    assert ToolPatterns(patterns).matches(name) is expected


def test_case_sensitive_patterns() -> None:
    patterns = ToolPatterns(["Read*"], case_sensitive=True)
    assert patterns.matches("ReadFile")
    assert not patterns.matches("readfile")


def test_single_string_is_one_pattern() -> None:
    patterns = ToolPatterns("bash")
    assert patterns.matches("bash")
    assert not patterns.matches("b")


@pytest.mark.parametrize("bad", [[""], ["  "], "", [None]])
def test_bad_patterns_are_refused(bad: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        ToolPatterns(bad)  # type: ignore[arg-type]


def test_non_string_name_never_matches() -> None:
    assert not ToolPatterns(["*"]).matches(None)  # type: ignore[arg-type]


def test_deny_list_skips_with_readable_reason() -> None:
    deny = ToolDenyList(["bash", "rm_*"], reason="Ask the user to run commands.")
    verdict = deny.evaluate(dispatch_ctx("rm_rf", {"path": "/"}))
    assert isinstance(verdict, Skip)
    assert "'rm_rf'" in verdict.reason
    assert "Ask the user to run commands." in verdict.reason
    assert isinstance(deny.evaluate(dispatch_ctx("read_file")), Allow)


def test_empty_deny_list_denies_nothing() -> None:
    assert isinstance(ToolDenyList([]).evaluate(dispatch_ctx("bash")), Allow)


def test_allow_list() -> None:
    allow = ToolAllowList(["read_file", "search_*"])
    assert isinstance(allow.evaluate(dispatch_ctx("read_file")), Allow)
    assert isinstance(allow.evaluate(dispatch_ctx("search_web")), Allow)
    skipped = allow.evaluate(dispatch_ctx("Read_File"))  # case matters by default
    assert isinstance(skipped, Skip)
    assert "not among the tools allowed" in skipped.reason
    assert isinstance(
        ToolAllowList(["read_file"], case_sensitive=False).evaluate(dispatch_ctx("READ_FILE")),
        Allow,
    )


def test_empty_allow_list_allows_nothing() -> None:
    assert isinstance(ToolAllowList([]).evaluate(dispatch_ctx("read_file")), Skip)


# ------------------------------------------------------------------ through a real run


async def test_deny_list_in_a_run_skips_only_the_denied_calls() -> None:
    bash, push, read = Recorder("Bash"), Recorder("mcp__git__push"), Recorder("read")
    script = [
        reply_tool_calls(("Bash", {"text": "rm -rf /"}), ("read", {}), ("mcp__git__push", {})),
        reply_text("done"),
    ]
    result, stream = await run(
        script,
        tools=[bash, push, read],
        pre_dispatch_policies=[ToolDenyList(["bash", "mcp__*__push"])],
    )
    assert bash.ran == [] and push.ran == []
    assert read.ran == [{}]
    skipped, ran, pushed = tool_results(result)
    assert skipped.is_error and pushed.is_error and not ran.is_error
    assert "'Bash' is blocked by policy" in skipped.text
    assert "'mcp__git__push' is blocked by policy" in pushed.text
    # The model reads the reason on its next call, and the run goes on to the end.
    assert "blocked by policy" in seen_by_model(stream, 1)
    assert result.text == "done"


async def test_allow_list_in_a_run() -> None:
    read, write = Recorder("read_file"), Recorder("write_file")
    script = [reply_tool_calls(("write_file", {}), ("read_file", {})), reply_text("done")]
    result, _ = await run(
        script, tools=[read, write], pre_dispatch_policies=[ToolAllowList(["read_*"])]
    )
    assert write.ran == []
    assert read.ran == [{}]
    assert "not among the tools allowed" in tool_results(result)[0].text


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=20).filter(lambda s: s.strip()))
def test_property_a_name_always_matches_itself(name: str) -> None:
    # Whatever glob characters a name holds, using it as a pattern matches it, in both modes.
    assert ToolPatterns([name]).matches(name)
    assert ToolPatterns([name], case_sensitive=True).matches(name)
    assert ToolDenyList([name]).evaluate(dispatch_ctx(name)) != Allow()
