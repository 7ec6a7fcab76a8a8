"""Names from the OpenTelemetry GenAI semantic conventions, and agentloop's own.

The conventions' names are written out here rather than imported: the semantic-conventions
package keeps them in an incubating module whose layout changes between releases. The tests
check every ``gen_ai.*`` name below against that package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from agentloop import ErrorKind, StopReason

if TYPE_CHECKING:
    from agentloop import Usage

__all__ = [
    "ABORT_EVENT",
    "AGENT_NAME",
    "CACHE_CREATION_TOKENS",
    "CACHE_READ_TOKENS",
    "CAPTURE_CONTENT_ENV",
    "CONVERSATION_ID",
    "ERROR_TYPE",
    "FINISH_REASONS",
    "INPUT_MESSAGES",
    "INPUT_TOKENS",
    "OPERATION_DURATION",
    "OPERATION_NAME",
    "OUTPUT_MESSAGES",
    "OUTPUT_TOKENS",
    "POLICY_EVENT",
    "PROVIDER_NAME",
    "REQUEST_MAX_TOKENS",
    "REQUEST_MODEL",
    "REQUEST_TEMPERATURE",
    "RESPONSE_MODEL",
    "RETRY_EVENT",
    "STEERING_EVENT",
    "SYSTEM_INSTRUCTIONS",
    "TIME_TO_FIRST_CHUNK",
    "TIME_TO_FIRST_CHUNK_METRIC",
    "TOKEN_TYPE",
    "TOKEN_USAGE",
    "TOOL_CALL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_DEFINITIONS",
    "TOOL_DESCRIPTION",
    "TOOL_DURATION",
    "TOOL_NAME",
    "TOOL_TYPE",
    "REASONING_TOKENS",
    "finish_reason",
    "input_tokens",
    "model_error_type",
    "provider_name",
]

# --------------------------------------------------------------------------- attributes

OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
RESPONSE_MODEL: Final = "gen_ai.response.model"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
REASONING_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
TOKEN_TYPE: Final = "gen_ai.token.type"
ERROR_TYPE: Final = "error.type"
# Opt-in content (``capture_content``).
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"

# --------------------------------------------------------------------------- metrics

TOKEN_USAGE: Final = "gen_ai.client.token.usage"
OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
TIME_TO_FIRST_CHUNK_METRIC: Final = "gen_ai.client.operation.time_to_first_chunk"
TOOL_DURATION: Final = "agentloop.tool.duration"  # the conventions define no tool metric

# --------------------------------------------------------------------------- span events

RETRY_EVENT: Final = "agentloop.retry"
ABORT_EVENT: Final = "agentloop.abort"
STEERING_EVENT: Final = "agentloop.steering_interrupt"
POLICY_EVENT: Final = "agentloop.policy_verdict"

CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# agentloop's provider names (``ModelSpec.provider``) that the conventions name otherwise.
_PROVIDERS: Final = {
    "azure": "azure.ai.openai",
    "bedrock": "aws.bedrock",
    "gemini": "gcp.gemini",
    "mistral": "mistral_ai",
    "openai_responses": "openai",
    "xai": "x_ai",
}

_FINISH: Final = {
    StopReason.STOP: "stop",
    StopReason.LENGTH: "length",
    StopReason.TOOL_USE: "tool_call",
    StopReason.ERROR: "error",
    StopReason.ABORTED: "aborted",
}


def provider_name(provider: str) -> str:
    """The conventions' ``gen_ai.provider.name`` for an agentloop provider name."""
    return _PROVIDERS.get(provider, provider)


def finish_reason(stop_reason: StopReason, error_kind: ErrorKind | None = None) -> str:
    """A stop reason as the conventions' finish reason (``content_filter`` for a filtered one)."""
    if error_kind is ErrorKind.CONTENT_FILTERED:
        return "content_filter"
    return _FINISH.get(stop_reason, str(stop_reason))


def model_error_type(error_kind: ErrorKind | None) -> str:
    """``error.type`` for a failed model call: the failure's kind (``throttled``, ``auth``...)."""
    return str(error_kind) if error_kind is not None else "other"


def input_tokens(usage: Usage) -> int:
    """``gen_ai.usage.input_tokens``: every input token, the cached ones included (agentloop's
    ``Usage.input`` leaves out what was read from or written to the cache)."""
    return usage.input + usage.cache_read + usage.cache_write
