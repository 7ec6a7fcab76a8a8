"""The server the official conformance suite's server scenarios run against, built only with
``agentloop_mcp.serve``: agentloop tools, resources and prompts, named as the suite expects
(its "everything server" specification).

    python tests/mcp/conformance/server.py PORT     serve streamable HTTP on 127.0.0.1:PORT

``noxfile.py``'s ``mcp-conformance`` session starts it and runs the suite; see docs/mcp.md.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

import anyio

import agentloop as al
import agentloop_mcp

IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="


def mcp_block(data: dict[str, Any]) -> al.Extension:
    """An MCP content block agentloop has no type for (audio, an embedded resource)."""
    return al.Extension(type_name=f"mcp_{data['type']}", data=data)


def embedded(uri: str, text: str, mime_type: str = "text/plain") -> al.Extension:
    resource = {"uri": uri, "mimeType": mime_type, "text": text}
    return mcp_block({"type": "resource", "resource": resource})


# --------------------------------------------------------------------------- tools


@al.tool
def test_simple_text() -> str:
    """Tests simple text content response"""
    return "This is a simple text response for testing."


@al.tool
def test_image_content() -> al.AgentToolResult:
    """Tests image content response"""
    return al.AgentToolResult(content=[al.Image(media_type="image/png", data=IMAGE)])


@al.tool
def test_audio_content() -> al.AgentToolResult:
    """Tests audio content response"""
    audio = mcp_block({"type": "audio", "data": AUDIO, "mimeType": "audio/wav"})
    return al.AgentToolResult(content=[audio])


@al.tool
def test_embedded_resource() -> al.AgentToolResult:
    """Tests embedded resource content response"""
    block = embedded("test://embedded-resource", "This is an embedded resource content.")
    return al.AgentToolResult(content=[block])


@al.tool
def test_multiple_content_types() -> al.AgentToolResult:
    """Tests response with multiple content types (text, image, resource)"""
    return al.AgentToolResult(
        content=[
            al.Text(text="Multiple content types test:"),
            al.Image(media_type="image/png", data=IMAGE),
            embedded(
                "test://mixed-content-resource",
                '{"test": "data", "value": 123}',
                "application/json",
            ),
        ]
    )


@al.tool
async def test_tool_with_logging() -> str:
    """Tests tool that emits log messages during execution"""
    client = agentloop_mcp.current_client()
    assert client is not None
    for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await client.log("info", step)
        await anyio.sleep(0.05)  # the specification asks for ~50 ms between messages
    return "Tool with logging executed successfully"


@al.tool
async def test_tool_with_progress(ctx: al.ToolContext) -> str:
    """Tests tool that reports progress notifications"""
    for done in (0, 50, 100):
        update = al.AgentToolResult(
            content=[al.Text(text=f"Completed step {done} of 100")],
            details={"progress": done, "total": 100},
        )
        ctx.on_update(update)
        await anyio.sleep(0.05)  # ~50 ms apart, as the specification asks
    return "progress reported"


@al.tool
async def test_sampling(prompt: str) -> str:
    """Tests server-initiated sampling (LLM completion request)"""
    client = agentloop_mcp.current_client()
    assert client is not None
    answer = await client.sample([prompt], max_tokens=100)
    return f"LLM response: {answer.text}"


@al.tool
async def test_elicitation(message: str) -> str:
    """Tests server-initiated elicitation (user input request)"""
    client = agentloop_mcp.current_client()
    assert client is not None
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    answer = await client.elicit(message, schema)
    return f"User response: action={answer.action}, content={json.dumps(answer.content or {})}"


@al.tool
async def test_elicitation_sep1034_defaults() -> str:
    """Tests elicitation with default values for all primitive types (SEP-1034)"""
    client = agentloop_mcp.current_client()
    assert client is not None
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe", "description": "User name"},
            "age": {"type": "integer", "default": 30, "description": "User age"},
            "score": {"type": "number", "default": 95.5, "description": "User score"},
            "status": {
                "type": "string",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
                "description": "User status",
            },
            "verified": {"type": "boolean", "default": True, "description": "Verification status"},
        },
    }
    answer = await client.elicit("Please provide user information", schema)
    content = json.dumps(answer.content or {})
    return f"Elicitation result: action={answer.action}, content={content}"


@al.tool
async def test_elicitation_sep1330_enums() -> str:
    """Tests elicitation with enum schema variations per SEP-1330"""
    client = agentloop_mcp.current_client()
    assert client is not None
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Simple enum without titles",
                "enum": ["active", "inactive", "pending"],
            },
            "titledSingle": {
                "type": "string",
                "description": "Enum with titled options (oneOf)",
                "oneOf": [
                    {"const": "low", "title": "Low Priority"},
                    {"const": "medium", "title": "Medium Priority"},
                    {"const": "high", "title": "High Priority"},
                ],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Multi-select without titles",
                "items": {"type": "string", "enum": ["read", "write", "execute"]},
            },
            "titledMulti": {
                "type": "array",
                "description": "Multi-select with titled options",
                "items": {
                    "anyOf": [
                        {"const": "feature", "title": "New Feature"},
                        {"const": "bug", "title": "Bug Fix"},
                        {"const": "docs", "title": "Documentation"},
                    ]
                },
            },
            "legacyEnum": {
                "type": "string",
                "description": "Legacy enum with enumNames",
                "enum": ["small", "medium", "large"],
                "enumNames": ["Small Size", "Medium Size", "Large Size"],
            },
        },
        "required": [
            "untitledSingle",
            "titledSingle",
            "untitledMulti",
            "titledMulti",
            "legacyEnum",
        ],
    }
    answer = await client.elicit("Please select values using different enum schema types", schema)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


@al.tool
def test_error_handling() -> str:
    """Tests error response handling"""
    raise RuntimeError("This tool intentionally returns an error for testing")


@al.tool
async def test_missing_capability() -> str:
    """Tests that a call needing a capability the client lacks is a protocol error"""
    client = agentloop_mcp.current_client()
    assert client is not None
    client.require("sampling")
    return "Client declared sampling capability; proceeding."


NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
OK_FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def client() -> agentloop_mcp.ServedClient:
    found = agentloop_mcp.current_client()
    assert found is not None
    return found


# The 2026 multi-round tools: each ask the client has not answered ends the round (SEP-2322).


@al.tool
async def test_input_required_result_elicitation() -> str:
    """Tests InputRequiredResult with a single elicitation request"""
    answer = await client().elicit("What is your name?", NAME_FORM, key="user_name")
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


@al.tool
async def test_input_required_result_sampling() -> str:
    """Tests InputRequiredResult with a single sampling request"""
    said = await client().sample(
        ["What is the capital of France?"], max_tokens=100, key="capital_question"
    )
    return f"Model said: {said.text}"


@al.tool
async def test_input_required_result_list_roots() -> str:
    """Tests InputRequiredResult with a single roots/list request"""
    roots = await client().roots(key="client_roots")
    return f"Client exposed {len(roots)} root(s)."


@al.tool
async def test_input_required_result_request_state() -> str:
    """Tests requestState round-tripping in the InputRequiredResult flow"""
    await client().elicit("Please confirm", OK_FORM, key="confirm")
    return "state-ok: confirmation received"


@al.tool
async def test_input_required_result_multi_round() -> str:
    """Tests a three-round InputRequiredResult flow with evolving requestState"""
    asker = client()
    name = await asker.elicit("Step 1: What is your name?", NAME_FORM, key="step1")
    colour_form = {
        "type": "object",
        "properties": {"color": {"type": "string"}},
        "required": ["color"],
    }
    colour = await asker.elicit("Step 2: What is your favorite color?", colour_form, key="step2")
    return f"{(name.content or {}).get('name')} likes {(colour.content or {}).get('color')}."


@al.tool
async def test_input_required_result_tampered_state() -> str:
    """Tests that the server rejects a tampered requestState echo"""
    await client().elicit("Please confirm", OK_FORM, key="confirm")
    return "state-ok"


@al.tool
async def test_input_required_result_capabilities() -> str:
    """Tests that inputRequests only include methods the client declared support for"""
    asker = client()
    caps = asker.capabilities
    if caps is None or caps.sampling is not None:
        await asker.sample(["Say hello"], max_tokens=50, key="sample")
    if caps is None or caps.elicitation is not None:
        await asker.elicit("What is your name?", NAME_FORM, key="ask")
    return "capability-gated"


class RegionTool(al.Tool):
    """A tool with an argument mirrored into an HTTP header (2026, SEP-2243)."""

    name = "test_x_mcp_header"
    label = "test_x_mcp_header"
    description = "Tests SEP-2243 Mcp-Param-* server-side validation"
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "region": {
                "type": "string",
                "description": "Mirrored into the Mcp-Param-Region header",
                "x-mcp-header": "Region",
                "default": "<none>",
            }
        },
    }

    async def execute(self, call_id: str, arguments: Any, on_update: Any) -> al.AgentToolResult:
        return al.AgentToolResult.text(f"region={arguments.get('region', '<none>')}")


class JsonSchema2020Tool(al.Tool):
    """A tool whose input schema carries the JSON Schema 2020-12 keywords the suite checks."""

    name = "json_schema_2020_12_tool"
    label = "json_schema_2020_12_tool"
    description = "Tests JSON Schema 2020-12 keyword preservation in tools/list"
    parameters = {  # noqa: RUF012
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    }

    def validate_arguments(self, arguments: Any) -> Any:
        return arguments  # the keywords are what the suite checks, not their enforcement

    async def execute(self, call_id: str, arguments: Any, on_update: Any) -> al.AgentToolResult:
        return al.AgentToolResult.text("json_schema_2020_12_tool")


TOOLS: list[al.AgentTool] = [
    test_simple_text,
    test_image_content,
    test_audio_content,
    test_embedded_resource,
    test_multiple_content_types,
    test_tool_with_logging,
    test_tool_with_progress,
    test_sampling,
    test_elicitation,
    test_elicitation_sep1034_defaults,
    test_elicitation_sep1330_enums,
    test_error_handling,
    test_missing_capability,
    test_input_required_result_elicitation,
    test_input_required_result_sampling,
    test_input_required_result_list_roots,
    test_input_required_result_request_state,
    test_input_required_result_multi_round,
    test_input_required_result_tampered_state,
    test_input_required_result_capabilities,
    RegionTool(),
    JsonSchema2020Tool(),
]

# --------------------------------------------------------------------------- resources


@agentloop_mcp.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource for testing"""
    return "This is the content of the static text resource."


@agentloop_mcp.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (image) for testing"""
    return base64.b64decode(IMAGE)


@agentloop_mcp.resource("test://template/{id}/data", mime_type="application/json")
def template(id: str) -> str:  # noqa: A002 - the template's variable
    """A resource template with parameter substitution"""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@agentloop_mcp.resource("test://watched-resource", mime_type="text/plain")
def watched() -> str:
    """A resource that can be subscribed to for updates"""
    return "Watched resource content"


RESOURCES = [static_text, static_binary, template, watched]

# --------------------------------------------------------------------------- prompts


@agentloop_mcp.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments"""
    return "This is a simple prompt for testing."


@agentloop_mcp.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with required arguments"""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@agentloop_mcp.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[al.AgentMessage]:  # noqa: N803
    """A prompt that includes an embedded resource"""
    return [
        al.UserMessage(content=[embedded(resourceUri, "Embedded resource content for testing.")]),
        al.UserMessage(content=[al.Text(text="Please process the embedded resource above.")]),
    ]


@agentloop_mcp.prompt()
def test_prompt_with_image() -> list[al.AgentMessage]:
    """A prompt that includes image content"""
    return [
        al.UserMessage(content=[al.Image(media_type="image/png", data=IMAGE)]),
        al.UserMessage(content=[al.Text(text="Please analyze the image above.")]),
    ]


@agentloop_mcp.prompt()
async def test_input_required_result_prompt() -> str:
    """Tests InputRequiredResult from prompts/get (SEP-2322 non-tool request)"""
    form = {
        "type": "object",
        "properties": {"context": {"type": "string"}},
        "required": ["context"],
    }
    answer = await client().elicit("What context should the prompt use?", form, key="user_context")
    return f"Use the following context: {(answer.content or {}).get('context', '?')}"


PROMPTS = [
    test_input_required_result_prompt,
    test_simple_prompt,
    test_prompt_with_arguments,
    test_prompt_with_embedded_resource,
    test_prompt_with_image,
]


async def main(port: int) -> None:
    await agentloop_mcp.serve(
        TOOLS,
        resources=RESOURCES,
        prompts=PROMPTS,
        name="agentloop-conformance-server",
        version="0.1.0",
        transport="streamable-http",
        port=port,
        on_ready=lambda url: print(url, flush=True),
    )


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 0)
