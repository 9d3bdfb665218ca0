// A real application-style client on @modelcontextprotocol/sdk 1.32.x: one scenario per run.
//   node client.mjs SCENARIO KIND (--url URL | -- argv...)
// SCENARIO: progress-cancel | deadline | late-cancel.  KIND: everything | fixture (tool names).
// Prints only what the application sees, deterministic for a given server.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [scenario, kind, ...rest] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const say = (line) => console.log(`ts-client ${scenario}: ${line}`);

const tools = {
  everything: {
    slow: { name: "trigger-long-running-operation", arguments: { duration: 4, steps: 8 } },
    echo: (t) => ({ name: "echo", arguments: { message: t } }),
  },
  fixture: {
    slow: { name: "ticker", arguments: { interval_ms: 300 } },
    echo: (t) => ({ name: "echo", arguments: { text: t } }),
  },
}[kind];
if (!tools) throw new Error(`unknown kind ${kind}`);

let transport;
if (rest[0] === "--url") transport = new StreamableHTTPClientTransport(new URL(rest[1]));
else if (rest[0] === "--") transport = new StdioClientTransport({ command: rest[1], args: rest.slice(2), stderr: "ignore" });
else throw new Error("give --url URL or -- argv");

const text = (r) => (r.content ?? []).map((c) => c.text).join(" ");
const client = new Client({ name: "pairs-ts-client", version: "0.1.0" });
await client.connect(transport);
say(`connected to ${client.getServerVersion()?.name}`);

if (scenario === "progress-cancel") {
  const controller = new AbortController();
  const seen = [];
  try {
    await client.callTool(tools.slow, undefined, {
      signal: controller.signal,
      onprogress: (p) => {
        seen.push(p.progress);
        controller.abort("user pressed stop");
      },
    });
    say("result (not expected)");
  } catch (e) {
    say(`call ended: ${e.message} after progress ${JSON.stringify(seen)}`);
  }
  await sleep(300);
} else if (scenario === "deadline") {
  const seen = [];
  try {
    await client.callTool(tools.slow, undefined, { timeout: 200, onprogress: (p) => seen.push(p.progress) });
    say("result (not expected)");
  } catch (e) {
    say(`call ended: code ${e.code} after progress ${JSON.stringify(seen)}`);
  }
  await sleep(300);
} else if (scenario === "late-cancel") {
  const controller = new AbortController();
  const r = await client.callTool(tools.echo("quick"), undefined, { signal: controller.signal });
  say(`result: ${text(r)}`);
  await sleep(1000); // the user leaves the view a second later; its controller aborts
  controller.abort("user navigated away after the answer");
  say("aborted the answered call's signal");
  await sleep(500);
} else throw new Error(`unknown scenario ${scenario}`);

const after = await client.callTool(tools.echo("still there?"));
say(`afterwards: ${text(after)}`);
await sleep(2000); // the application stays open a while
if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession();
await client.close();
say("closed");
