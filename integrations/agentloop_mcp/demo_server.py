"""A tiny MCP server, for the docs and for trying the integration: weather forecasts, as tools,
a resource per city, and a prompt.

Run it with ``python -m agentloop_mcp.demo_server`` (it speaks MCP over stdin and stdout).
"""

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

mcp = MCPServer("weather", log_level="WARNING")

FORECASTS = {"lisbon": ("sunny", 24), "oslo": ("snow", -3)}


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
def forecast(city: str) -> dict[str, str | int]:
    """Tomorrow's weather in a city."""
    sky, celsius = FORECASTS.get(city.lower(), ("unknown", 0))
    return {"city": city, "sky": sky, "celsius": celsius}


@mcp.tool()
def report(city: str, sky: str) -> str:
    """Report the weather seen in a city (changes the server's data)."""
    FORECASTS[city.lower()] = (sky, FORECASTS.get(city.lower(), ("", 0))[1])
    return f"thanks, noted {sky} in {city}"


@mcp.resource("weather://{city}", mime_type="text/plain")
def city_report(city: str) -> str:
    """The latest report for a city."""
    sky, celsius = FORECASTS.get(city.lower(), ("unknown", 0))
    return f"{city}: {sky}, {celsius} °C"


@mcp.resource("weather://cities", mime_type="text/plain")
def cities() -> str:
    """The cities with a forecast."""
    return ", ".join(sorted(FORECASTS))


@mcp.prompt(title="Packing list")
def packing(city: str, days: str = "3") -> str:
    """What to pack for a trip."""
    return f"Write a packing list for {days} days in {city}; check the forecast first."


if __name__ == "__main__":
    mcp.run()  # stdio
