"""The client the official conformance suite's client scenarios run, built on ``agentloop_mcp``:
each scenario connects with ``open_toolset`` and works through the toolset's ``McpTool``s, its
elicitation callback and its ``HttpServer(auth=...)``, as an application would.

    python tests/mcp/conformance/client.py SERVER_URL

The suite sets ``MCP_CONFORMANCE_SCENARIO`` (which scenario), ``MCP_CONFORMANCE_PROTOCOL_VERSION``
(the wire to speak: 2025-era versions use the handshake, 2026 the per-request protocol) and,
for some scenarios, ``MCP_CONFORMANCE_CONTEXT`` (JSON: client credentials, tool calls). The
OAuth flows use the MCP SDK's ``OAuthClientProvider`` (an ``httpx2.Auth``), which is how an
application gives ``HttpServer`` its credentials.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2

import agentloop_mcp as mcp

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
log = logging.getLogger("conformance-client")

VERSION = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
MODE: Any = "auto" if VERSION is None or VERSION >= "2026" else "legacy"
Scenario = Callable[[str], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(*names: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        for name in names:
            SCENARIOS[name] = fn
        return fn

    return register


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return json.loads(raw) if raw else {}


def spec(url: str, **options: Any) -> mcp.HttpServer:
    options.setdefault("mode", MODE)
    return mcp.HttpServer(url=url, name="conformance", restart=None, **options)


async def call(toolset: mcp.McpToolset, name: str, arguments: dict[str, Any]) -> str:
    """Call a tool as an agent's loop would, and return its text."""
    for tool in toolset.get_tools():
        if isinstance(tool, mcp.McpTool) and tool.mcp_name == name:
            result = await tool.execute(f"call-{name}", arguments, lambda update: None)
            text = "".join(getattr(b, "text", "") for b in result.content)
            log.info("%s -> %s%s", name, "error: " if result.is_error else "", text[:200])
            return text
    raise LookupError(f"the server offers no tool {name!r}")


def stub_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """The least arguments that satisfy a schema's ``required`` list."""
    by_type = {
        "string": "x",
        "integer": 0,
        "number": 0,
        "boolean": False,
        "object": {},
        "array": [],
    }
    properties = schema.get("properties", {})
    return {
        name: by_type.get(properties.get(name, {}).get("type"), "x")
        for name in schema.get("required", [])
    }


async def accept_with_defaults(request: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
    """Accept every form as it comes: the client fills the schema's defaults in (SEP-1034)."""
    return mcp.ElicitationResponse.accept({})


# --------------------------------------------------------------------------- scenarios


@scenario("initialize", "json-schema-ref-no-deref")
async def list_only(url: str) -> None:
    mode = (
        "legacy" if os.environ["MCP_CONFORMANCE_SCENARIO"] == "json-schema-ref-no-deref" else MODE
    )
    async with mcp.open_toolset(spec(url, mode=mode)) as toolset:
        log.info("tools: %s", [t.name for t in toolset.get_tools()])


@scenario("tools_call", "tools-call", "http-standard-headers", "request-metadata")
async def add_numbers(url: str) -> None:
    roots = mcp.Roots()
    model = mcp.Sampler()  # advertises sampling; refuses without approval
    async with mcp.open_toolset(
        spec(url), elicitation=accept_with_defaults, roots=roots, sampling=model
    ) as toolset:
        await call(toolset, "add_numbers", {"a": 5, "b": 3})


@scenario("json-schema-2020-12-preservation")
async def echo_schema(url: str) -> None:
    async with mcp.open_toolset(spec(url)) as toolset:
        focal = next(
            t
            for t in toolset.get_tools()
            if getattr(t, "mcp_name", "") == "json_schema_2020_12_tool"
        )
        await call(toolset, "json_schema_echo", {"schema": focal.parameters})


@scenario("sse-retry")
async def reconnect(url: str) -> None:
    async with mcp.open_toolset(spec(url)) as toolset:
        await call(toolset, "test_reconnection", {})


@scenario("elicitation-sep1034-client-defaults")
async def elicitation_defaults(url: str) -> None:
    async with mcp.open_toolset(spec(url), elicitation=accept_with_defaults) as toolset:
        await call(toolset, "test_client_elicitation_defaults", {})


@scenario("sep-2322-client-request-state")
async def request_state(url: str) -> None:
    async def confirm(request: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
        return mcp.ElicitationResponse.accept({"confirmed": True})

    async with mcp.open_toolset(spec(url), elicitation=confirm) as toolset:
        for name in (
            "test_mrtr_echo_state",
            "test_mrtr_unrelated",
            "test_mrtr_no_state",
            "test_mrtr_no_result_type",
        ):
            await call(toolset, name, {})


@scenario("http-invalid-tool-headers")
async def call_every_tool(url: str) -> None:
    async with mcp.open_toolset(spec(url)) as toolset:
        for tool in toolset.get_tools():
            if isinstance(tool, mcp.McpTool):
                await call(toolset, tool.mcp_name, stub_arguments(tool.parameters))


@scenario("http-custom-headers")
async def replay_tool_calls(url: str) -> None:
    async with mcp.open_toolset(spec(url)) as toolset:
        offered = {getattr(t, "mcp_name", "") for t in toolset.get_tools()}
        for planned in context().get("toolCalls", []):
            if planned["name"] in offered:
                await call(toolset, planned["name"], planned.get("arguments") or {})


# --------------------------------------------------------------------------- authorization


async def run_with_auth(url: str, auth: httpx2.Auth) -> None:
    async with mcp.open_toolset(spec(url, auth=auth), elicitation=accept_with_defaults) as toolset:
        tools = [t for t in toolset.get_tools() if isinstance(t, mcp.McpTool)]
        if tools:
            await call(toolset, tools[0].mcp_name, {})


class MemoryTokens:
    """Token storage for one run."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


class HeadlessBrowser:
    """Follows the authorization URL's redirect and keeps the code, as a browser would."""

    def __init__(self) -> None:
        self.result: Any = None

    async def redirect(self, authorization_url: str) -> None:
        from mcp.shared.auth import AuthorizationCodeResult

        async with httpx2.AsyncClient() as http:
            response = await http.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location") or ""
        query = parse_qs(urlparse(location).query)
        if "code" not in query:
            raise RuntimeError(f"no authorization code in {location!r}")
        self.result = AuthorizationCodeResult(
            code=query["code"][0],
            state=query["state"][0] if query.get("state") else None,
            iss=query["iss"][0] if query.get("iss") else None,
        )

    async def callback(self) -> Any:
        result, self.result = self.result, None
        return result


async def authorization_code(url: str) -> None:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata
    from pydantic import AnyUrl

    storage = MemoryTokens()
    given = context()
    if given.get("client_id"):
        await storage.set_client_info(
            OAuthClientInformationFull(
                client_id=given["client_id"],
                client_secret=given.get("client_secret"),
                redirect_uris=[AnyUrl("http://localhost:3000/callback")],
                token_endpoint_auth_method="client_secret_basic"
                if given.get("client_secret")
                else "none",
            )
        )
    browser = HeadlessBrowser()
    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="agentloop-conformance",
            redirect_uris=[AnyUrl("http://localhost:3000/callback")],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=browser.redirect,
        callback_handler=browser.callback,
        client_metadata_url="https://conformance-test.local/client-metadata.json",
    )
    await run_with_auth(url, auth)


@scenario("auth/client-credentials-basic")
async def client_credentials_basic(url: str) -> None:
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

    given = context()
    auth = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=MemoryTokens(),
        client_id=given["client_id"],
        client_secret=given["client_secret"],
        token_endpoint_auth_method="client_secret_basic",
    )
    await run_with_auth(url, auth)


@scenario("auth/client-credentials-jwt")
async def client_credentials_jwt(url: str) -> None:
    from mcp.client.auth.extensions.client_credentials import (
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    given = context()
    parameters = SignedJWTParameters(
        issuer=given["client_id"],
        subject=given["client_id"],
        signing_algorithm=given.get("signing_algorithm", "ES256"),
        signing_key=given["private_key_pem"],
    )
    auth = PrivateKeyJWTOAuthProvider(
        server_url=url,
        storage=MemoryTokens(),
        client_id=given["client_id"],
        assertion_provider=parameters.create_assertion_provider(),
    )
    await run_with_auth(url, auth)


@scenario("auth/enterprise-managed-authorization")
async def enterprise(url: str) -> None:
    """SEP-990: an identity assertion from the enterprise IdP, exchanged for a token."""
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
    from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls

    given = context()
    # The authorization server's issuer is configuration in real deployments; here it is
    # read from the harness's protected resource metadata.
    metadata_url = build_protected_resource_metadata_discovery_urls(None, url)[0]
    async with httpx2.AsyncClient(timeout=30.0) as http:
        issuer = (
            (await http.get(metadata_url)).raise_for_status().json()["authorization_servers"][0]
        )

    async def id_jag(audience: str, resource: str) -> str:
        async with httpx2.AsyncClient(timeout=30.0) as http:
            response = await http.post(
                given["idp_token_endpoint"],
                data={
                    "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                    "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "subject_token": given["idp_id_token"],
                    "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                    "audience": audience,
                    "resource": resource,
                    "client_id": given["idp_client_id"],
                },
            )
            return str(response.raise_for_status().json()["access_token"])

    auth = IdentityAssertionOAuthProvider(
        server_url=url,
        storage=MemoryTokens(),
        client_id=given["client_id"],
        client_secret=given["client_secret"],
        issuer=issuer,
        assertion_provider=id_jag,
        token_endpoint_auth_method="client_secret_basic",
    )
    await run_with_auth(url, auth)


def main() -> None:
    url = sys.argv[1]
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = SCENARIOS.get(name)
    if run is None and name.startswith("auth/"):
        run = authorization_code
    if run is None:
        print(f"unknown scenario {name!r}", file=sys.stderr)
        sys.exit(1)
    log.info("scenario %s at %s (mode %s)", name, url, MODE)
    anyio.run(run, url)


if __name__ == "__main__":
    main()
