"""Conformance adapter for the official Python SDK client (`mcp` on PyPI).

Acts out the actions of one `conformance client` case and prints one outcome line per
action on stdout; the contract is in the repository README, "Testing a client".
"""

import json
import os
import sys

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT


def report(action, outcome, **extra):
    print(json.dumps({"action": action, "outcome": outcome, **extra}), flush=True)


async def call(session, index, action):
    seen = []
    with anyio.CancelScope() as scope:
        if "cancel_after_ms" in action:
            scope.deadline = anyio.current_time() + action["cancel_after_ms"] / 1000

        async def on_progress(progress, total, message):
            seen.append(progress)
            if action.get("cancel") == "on-progress":
                scope.cancel()

        extra = {"progress": seen} if action.get("progress") else {}
        timeout = action["timeout_ms"] / 1000 if "timeout_ms" in action else None
        try:
            if "ping" in action:
                await session.send_ping()
                report(index, "result", **extra)
            else:
                result = await session.call_tool(
                    action["call"],
                    action.get("arguments", {}),
                    read_timeout_seconds=timeout,
                    progress_callback=on_progress if action.get("progress") else None,
                )
                text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                report(index, "result", text=text, **extra)
        except MCPError as error:
            word = "timeout" if error.error.code == REQUEST_TIMEOUT else "error"
            report(index, word, text=str(error), **extra)
        except Exception as error:  # any other failure of the call
            report(index, "error", text=repr(error), **extra)
    if scope.cancelled_caught:
        report(index, "cancelled", **extra)


async def main():
    server = json.loads(os.environ["CONFORMANCE_SERVER"])
    actions = json.loads(os.environ["CONFORMANCE_ACTIONS"])
    if not actions or "connect" not in actions[0]:
        sys.exit("the first action must be connect")
    params = StdioServerParameters(command=server[0], args=server[1:])
    exit_index = None
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            connect = actions[0]
            try:
                if "timeout_ms" in connect:
                    with anyio.fail_after(connect["timeout_ms"] / 1000):
                        await session.initialize()
                else:
                    await session.initialize()
            except TimeoutError as error:
                report(0, "timeout", text=repr(error))
                return
            except Exception as error:
                report(0, "error", text=repr(error))
                return
            report(0, "result")
            async with anyio.create_task_group() as group:
                for index, action in enumerate(actions[1:], start=1):
                    if "exit" in action:
                        exit_index = index
                        break
                    if "sleep_ms" in action:
                        await anyio.sleep(action["sleep_ms"] / 1000)
                        report(index, "result")
                    elif action.get("concurrent"):
                        group.start_soon(call, session, index, action)
                    else:
                        await call(session, index, action)
    # Leaving stdio_client closed the server's stdin and waited for it to exit.
    if exit_index is not None:
        report(exit_index, "result")


if __name__ == "__main__":
    anyio.run(main)
