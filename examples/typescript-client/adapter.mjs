// Conformance adapter for the official TypeScript SDK client (@modelcontextprotocol/sdk).
// Acts out the actions of one `conformance client` case and prints one outcome line per
// action on stdout; the contract is in the repository README, "Testing a client".

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

const server = JSON.parse(process.env.CONFORMANCE_SERVER);
const actions = JSON.parse(process.env.CONFORMANCE_ACTIONS);

function report(action, outcome, extra = {}) {
  process.stdout.write(JSON.stringify({ action, outcome, ...extra }) + "\n");
}

// The SDK rejects an aborted call with an McpError whose code is RequestTimeout (-32001),
// the same code as its own timeout, so a caller cancel is told apart by the signal.
function classify(error, signal) {
  if (signal?.aborted) return "cancelled";
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) return "timeout";
  return "error";
}

async function call(client, index, action) {
  const controller = new AbortController();
  const reason = new Error("cancelled by the conformance adapter");
  const cancel = () => controller.abort(reason);
  const seen = [];
  const options = { signal: controller.signal };
  if (action.timeout_ms !== undefined) options.timeout = action.timeout_ms;
  if (action.progress) {
    options.onprogress = (p) => {
      seen.push(p.progress);
      if (action.cancel === "on-progress") cancel();
    };
  }
  let timer;
  if (action.cancel_after_ms !== undefined) timer = setTimeout(cancel, action.cancel_after_ms);
  const progress = action.progress ? { progress: seen } : {};
  try {
    if (action.ping !== undefined) {
      await client.ping(options);
      report(index, "result", progress);
    } else {
      const result = await client.callTool(
        { name: action.call, arguments: action.arguments ?? {} },
        undefined,
        options,
      );
      const text = (result.content ?? [])
        .filter((c) => c.type === "text")
        .map((c) => c.text)
        .join("\n");
      report(index, "result", { text, ...progress });
    }
  } catch (error) {
    report(index, classify(error, controller.signal), { text: String(error), ...progress });
  } finally {
    clearTimeout(timer);
  }
}

async function main() {
  let client;
  const pending = [];
  let exitIndex;
  for (const [index, action] of actions.entries()) {
    if (action.connect !== undefined) {
      const transport = new StdioClientTransport({
        command: server[0],
        args: server.slice(1),
        stderr: "inherit",
      });
      client = new Client({ name: "conformance-adapter-typescript", version: "0.1.0" });
      const options = action.timeout_ms !== undefined ? { timeout: action.timeout_ms } : {};
      try {
        await client.connect(transport, options);
        report(index, "result");
      } catch (error) {
        report(index, classify(error), { text: String(error) });
        await client.close().catch(() => {});
        return;
      }
    } else if (action.sleep_ms !== undefined) {
      await new Promise((resolve) => setTimeout(resolve, action.sleep_ms));
      report(index, "result");
    } else if (action.exit !== undefined) {
      exitIndex = index;
      break;
    } else if (action.concurrent) {
      pending.push(call(client, index, action));
    } else {
      await call(client, index, action);
    }
  }
  await Promise.all(pending);
  if (client) await client.close();
  if (exitIndex !== undefined) report(exitIndex, "result");
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
