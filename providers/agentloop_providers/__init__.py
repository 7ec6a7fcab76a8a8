"""Provider adapters for agentloop: raw HTTP streaming to model APIs (httpx, no vendor SDKs)."""
