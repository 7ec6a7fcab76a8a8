"""An HTTP provider serves successive event loops and backends (nothing it makes for one loop,
such as its HTTP client and its pooled connections, is reused on the next), against a real
server on 127.0.0.1 that keeps connections alive as the real APIs do.

The server runs in a thread of its own, so each ``prompt_sync`` runs an event loop of its own.
"""

from __future__ import annotations

import pytest

from agentloop import Agent, ModelSpec
from agentloop_providers import AnthropicProvider, OpenAIChatProvider
from tests.docs._fake_apis import ANSWER, FakeApis, running_fake_apis


@pytest.mark.parametrize("provider_name", ["anthropic", "openai"])
def test_one_provider_serves_trio_then_asyncio_then_trio(provider_name: str) -> None:
    apis = FakeApis(keep_alive=True)
    with running_fake_apis(apis):
        base = f"http://127.0.0.1:{apis.port}"
        if provider_name == "anthropic":
            provider: AnthropicProvider | OpenAIChatProvider = AnthropicProvider(
                api_key="sk-ant-test", base_url=base
            )
        else:
            provider = OpenAIChatProvider(api_key="sk-test", base_url=f"{base}/v1")
        agent = Agent(model=ModelSpec(provider=provider_name, model_id="m"), stream_fn=provider)
        answers = [
            agent.prompt_sync(prompt, backend=backend)
            for prompt, backend in [("one", "trio"), ("two", "asyncio"), ("three", "trio")]
        ]
        assert [a.text for a in answers] == [ANSWER] * 3, [a.final_message for a in answers]
        assert len(apis.requests) == 3
        # Each loop had a client (and a connection) of its own.
        assert apis.connections == 3
