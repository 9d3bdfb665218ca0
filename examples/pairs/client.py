"""A real application-style client on the Python SDK's high-level `mcp.Client` (mcp 2.3.x).

    python client.py SCENARIO KIND (--url URL | -- argv...)

SCENARIO: progress-cancel | deadline | race.  KIND: everything | fixture (tool names).
Prints only what the application sees, deterministic for a given server.
"""

import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

scenario, kind, *rest = sys.argv[1:]
TOOLS = {
    "everything": (("trigger-long-running-operation", {"duration": 4, "steps": 8}), lambda t: ("echo", {"message": t}),
                   ("trigger-long-running-operation", {"duration": 0.3, "steps": 1})),
    "fixture": (("ticker", {"interval_ms": 300}), lambda t: ("echo", {"text": t}), ("sleep", {"ms": 300})),
}
SLOW, ECHO, SHORT = TOOLS[kind]


def say(line: str) -> None:
    print(f"py-client {scenario}: {line}", flush=True)


def text(result) -> str:
    return " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def progress_cancel(client: Client) -> None:
    seen = []
    with anyio.CancelScope() as scope:
        async def on_progress(progress, total, message):
            seen.append(progress)
            scope.cancel()

        await client.call_tool(*SLOW, progress_callback=on_progress)
        say("result (not expected)")
    say(f"call cancelled: {scope.cancelled_caught} after progress {seen}")


async def deadline(client: Client) -> None:
    seen = []

    async def on_progress(progress, total, message):
        seen.append(progress)

    try:
        await client.call_tool(*SLOW, read_timeout_seconds=0.2, progress_callback=on_progress)
        say("result (not expected)")
    except MCPError as error:
        say(f"call ended: code {error.code} after progress {seen}")


async def race(client: Client) -> None:
    # The caller gives up right when the answer is due: the cancel races the result.
    with anyio.move_on_after(0.3) as scope:
        result = await client.call_tool(*SHORT)
        print(f"race: result {text(result)!r}", file=sys.stderr)
    print(f"race: cancelled {scope.cancelled_caught}", file=sys.stderr)
    say("settled")


async def main() -> None:
    if rest[:1] == ["--url"]:
        target = rest[1]
    elif rest[:1] == ["--"]:
        target = StdioServerParameters(command=rest[1], args=rest[2:])
    else:
        sys.exit("give --url URL or -- argv")
    async with Client(target) as client:
        say(f"connected to {client.server_info.name if client.server_info else '?'}")
        await {"progress-cancel": progress_cancel, "deadline": deadline, "race": race}[scenario](client)
        await anyio.sleep(0.3)
        after = await client.call_tool(*ECHO("still there?"))
        say(f"afterwards: {text(after)}")
        await anyio.sleep(2)  # the application stays open a while
    say("closed")


anyio.run(main)
