"""The parts of agentloop_local that need no model: output splitting, templates, grammars,
presets and model strings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
import pytest
from hypothesis import given, strategies as st

import agentloop_local
from agentloop import (
    AssistantMessage,
    Image,
    ModelSpec,
    StopReason,
    Text,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentloop.models import resolve_model
from agentloop.stream import (
    Accumulator,
    Done,
    LlmContext,
    TextDelta,
    ThinkingDelta,
    ToolSchema,
)
from agentloop_local import LocalModelError, LocalProvider, UnknownLocalModel, parse_model_id
from agentloop_local._grammar import _call_schema, call_grammar
from agentloop_local._presets import resolve_source
from agentloop_local._registry import local
from agentloop_local._splitter import OutputSplitter
from agentloop_local._template import ChatTemplate

if TYPE_CHECKING:
    from pathlib import Path

    from agentloop.stream import AssistantMessageEvent

SPEC = ModelSpec(provider="local", model_id="m")
OUTPUT = (
    "<think>Let me see.</think>\nSure, I will add them.\n<tool_call>\n"
    '{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
)


def _split(pieces: list[str], *, tools: bool = True) -> AssistantMessage:
    splitter = OutputSplitter(tools=tools, call_id=lambda n: f"call_{n}")
    acc = Accumulator(SPEC)
    events: list[AssistantMessageEvent] = []
    for piece in pieces:
        events.extend(splitter.feed(piece))
    events.extend(splitter.finish())
    for event in events:
        acc.push(event)
    acc.push(Done(stop_reason=StopReason.TOOL_USE if splitter.calls else StopReason.STOP))
    return acc.finish()


def test_output_splits_into_reasoning_text_and_a_call() -> None:
    message = _split([OUTPUT])
    kinds = [type(b).__name__ for b in message.content]
    assert kinds == ["Thinking", "Text", "ToolCall"]
    assert message.content[0].thinking == "Let me see."  # type: ignore[union-attr]
    assert message.content[1].text == "Sure, I will add them.\n"  # type: ignore[union-attr]
    call = message.content[2]
    assert type(call) is ToolCall and call.name == "add" and call.arguments == {"a": 2, "b": 3}


@given(st.lists(st.integers(min_value=0, max_value=len(OUTPUT)), max_size=12))
def test_output_splits_the_same_wherever_the_pieces_break(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(OUTPUT)]
    pieces = [OUTPUT[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    assert _split(pieces).content == _split([OUTPUT]).content


def test_no_part_of_a_tag_leaks_into_streamed_text() -> None:
    splitter = OutputSplitter(tools=True, call_id=str)
    streamed = []
    for char in "Hi <tool_c":
        streamed += [e.delta for e in splitter.feed(char) if type(e) is TextDelta]
    assert "".join(streamed) == "Hi "


def test_a_call_cut_off_keeps_its_raw_text_and_is_incomplete() -> None:
    message = _split(['<tool_call>\n{"name": "add", "argu'])
    call = message.content[0]
    assert type(call) is ToolCall and call.partial_json is not None


def test_a_call_cut_off_in_its_closing_tag_is_whole() -> None:
    message = _split(['<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool'])
    call = message.content[0]
    assert type(call) is ToolCall and call.partial_json is None and call.arguments == {"a": 1}


def test_without_tools_a_call_tag_is_plain_text() -> None:
    message = _split(["<tool_call>x</tool_call>"], tools=False)
    assert message.content == [Text(text="<tool_call>x</tool_call>")]


def test_a_model_that_writes_a_tool_response_is_stopped_there() -> None:
    splitter = OutputSplitter(tools=False, call_id=str)
    events = splitter.feed("Fine.<tool_res") + splitter.feed("ponse>\n42") + splitter.feed("more")
    assert splitter.stopped
    assert "".join(e.delta for e in events if type(e) is TextDelta) == "Fine."
    assert splitter.finish() == []


def test_reasoning_streams_as_thinking_deltas() -> None:
    splitter = OutputSplitter(tools=False, call_id=str)
    events = splitter.feed("<think>abc") + splitter.feed("def</think>ok")
    assert "".join(e.delta for e in events if type(e) is ThinkingDelta) == "abcdef"


# --------------------------------------------------------------------------- templates

ADD = ToolSchema(
    name="add",
    description="Add.",
    parameters={"type": "object", "properties": {"a": {"type": "integer"}}},
)
HISTORY = LlmContext(
    system_prompt="Be brief.",
    messages=[
        UserMessage(content=[Text(text="add 1"), Image(data="aGk=")]),
        AssistantMessage(content=[ToolCall(id="c1", name="add", arguments={"a": 1})]),
        ToolResultMessage(tool_call_id="c1", content=[Text(text="1")]),
        ToolResultMessage(tool_call_id="c2", content=[Text(text="no")], is_error=True),
    ],
    tools=[ADD],
)
NATIVE = (
    "{% if tools %}TOOLS:{{ tools | map(attribute='function.name') | join(',') }}|{% endif %}"
    "{% for m in messages %}[{{ m.role }}:{{ m.content }}"
    "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function.name }}{% endfor %}]{% endfor %}"
)


def test_a_template_without_tools_gets_them_in_the_system_prompt() -> None:
    prompt = ChatTemplate(None).render(HISTORY)  # ChatML, as a GGUF without a template
    assert prompt.startswith("<|im_start|>system\nBe brief.\n\nYou can call tools.")
    assert '- add: Add. Arguments (JSON Schema): {"properties":' in prompt
    assert '<tool_call>\n{"arguments":{"a":1},"name":"add"}\n</tool_call>' in prompt
    # Both results in one user turn (roles alternate), the error marked as one.
    assert "<tool_response>\n1\n</tool_response>\n\n<tool_response>\nError: no\n" in prompt
    assert "[an image, which this model cannot see]" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_a_template_that_speaks_tool_calls_renders_them_itself() -> None:
    template = ChatTemplate(NATIVE)
    assert template.native_tools
    prompt = template.render(HISTORY)
    assert prompt.startswith("TOOLS:add|[system:Be brief.]")
    assert "[assistant:<tool_call>add]" in prompt and "[tool:1]" in prompt
    assert "TOOLS" not in template.render(HISTORY, tools=False)


def test_the_gemma_preset_brings_the_template_its_gguf_lacks() -> None:
    preset = agentloop_local.get_preset("gemma3-270m")
    prompt = ChatTemplate(preset.chat_template, bos="<bos>").render(HISTORY)
    assert prompt.startswith("<bos><start_of_turn>user\nBe brief.\n\nYou can call tools.")
    assert "<start_of_turn>model\n<tool_call>" in prompt  # the past call, in its turn
    assert prompt.count("<start_of_turn>user") == 2  # both results in one turn: roles alternate
    assert prompt.endswith("<end_of_turn>\n<start_of_turn>model\n")


def test_a_template_that_refuses_or_escapes_is_a_local_model_error() -> None:
    with pytest.raises(LocalModelError, match="refused"):
        ChatTemplate("{{ raise_exception('roles must alternate') }}").render(HISTORY)
    with pytest.raises(LocalModelError):  # the sandbox stops templates reaching Python
        ChatTemplate("{{ ''.__class__.__mro__[1].__subclasses__() }}").render(HISTORY)
    with pytest.raises(LocalModelError, match="not valid Jinja"):
        ChatTemplate("{% for %}")


# --------------------------------------------------------------------------- grammars


def test_call_schema_keeps_each_tools_definitions_apart() -> None:
    ref = {"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}, "$defs": {"X": {}}}
    tools = [
        ToolSchema(name="a", description="", parameters=ref),
        ToolSchema(name="b", description="", parameters=ref),
    ]
    schema = _call_schema(tools)
    assert set(schema["$defs"]) == {"t0-X", "t1-X"}
    arguments = [alt["properties"]["arguments"] for alt in schema["anyOf"]]
    assert [a["properties"]["x"]["$ref"] for a in arguments] == ["#/$defs/t0-X", "#/$defs/t1-X"]


def test_call_grammars_wrap_the_call_in_its_tags() -> None:
    pytest.importorskip("llama_cpp")
    forced = call_grammar([ADD], forced=True)
    assert forced.startswith('root ::= "<tool_call>" "\\n"? call "\\n"? "</tool_call>"\n')
    assert "call ::=" in forced
    lazy = call_grammar([ADD], forced=False)
    assert lazy.splitlines()[0].endswith(")*")
    broken = ToolSchema(name="x", description="", parameters={"type": "object", "$ref": 5})
    assert "call ::=" in call_grammar([broken], forced=True)  # falls back, still a grammar


# --------------------------------------------------------------------------- model strings


def test_model_ids_carry_a_context_window() -> None:
    assert parse_model_id("smollm2") == ("smollm2", None)
    assert parse_model_id("/m/x.gguf?context_window=2048") == ("/m/x.gguf", 2048)
    for bad in ("m?context_window=0", "m?context_window=x", "m?colour=red", "m?context_window"):
        with pytest.raises(ValueError):  # noqa: PT011 (each message differs; the type matters)
            parse_model_id(bad)


def test_local_model_strings_resolve_through_the_entry_point() -> None:
    resolved = resolve_model("local:smollm2?context_window=1024")
    assert resolved.spec == ModelSpec(provider="local", model_id="smollm2", context_window=1024)
    assert isinstance(resolved.stream_fn, LocalProvider)
    assert local("smollm2").spec.context_window == 8192  # the preset's
    assert local("/no/such.gguf").spec.context_window == 4096  # loads nothing yet


def test_sources_are_presets_or_existing_files(tmp_path: Path) -> None:
    with pytest.raises(UnknownLocalModel, match="neither a local model preset"):
        resolve_source("llama9")
    with pytest.raises(UnknownLocalModel, match="no GGUF file"):
        resolve_source(str(tmp_path / "missing.gguf"))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    assert resolve_source(str(model)) == (model.resolve(), None)


def test_a_file_that_is_not_a_model_fails_to_load(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf at all")
    with pytest.raises(LocalModelError, match="could not load"):
        agentloop_local.load_model_sync(str(bad))


def test_available_models_list_installed_ones_first() -> None:
    entries = agentloop_local.available_models()
    assert {e.preset.name for e in entries} == set(agentloop_local.presets())
    assert [e.installed for e in entries] == sorted((e.installed for e in entries), reverse=True)
    assert all(e.model_string == f"local:{e.preset.name}" for e in entries)
    msgspec.json.encode(entries)  # a wizard may send them anywhere


def test_the_runtime_is_found_without_being_loaded() -> None:
    import importlib.util
    import subprocess
    import sys

    expected = importlib.util.find_spec("llama_cpp") is not None
    assert agentloop_local.runtime_available() is expected
    code = (
        "import sys, agentloop_local\n"
        "agentloop_local.runtime_available(); agentloop_local.available_models()\n"
        "assert 'llama_cpp' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_all_is_sorted_and_complete() -> None:
    names = agentloop_local.__all__
    assert names == sorted(names)
    public = {n for n in dir(agentloop_local) if not n.startswith("_")}
    assert public - {"annotations"} == set(names)


def test_importing_the_package_loads_no_native_library() -> None:
    import subprocess
    import sys

    code = "import sys, agentloop_local\nassert 'llama_cpp' not in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True)
