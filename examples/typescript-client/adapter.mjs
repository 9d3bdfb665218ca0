// Conformance adapter for the official TypeScript SDK 1.x client (@modelcontextprotocol/sdk).
// Acts out the actions of one `conformance client` case and prints one outcome line per
// action on stdout; the contract is in the repository README, "Testing a client".
// It talks to its server over stdio (CONFORMANCE_SERVER, an argv to spawn) or over
// Streamable HTTP (CONFORMANCE_SERVER_URL).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, LATEST_PROTOCOL_VERSION, McpError } from "@modelcontextprotocol/sdk/types.js";

function log(message) {
  process.stderr.write(`[typescript-client adapter] ${message}\n`);
}

// A broken environment: the harness (or whoever runs the adapter) set it up wrong.
class UsageError extends Error {}

function environment() {
  const read = (name) => {
    const text = process.env[name];
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new UsageError(`${name} is not JSON (${error.message}): ${text}`);
    }
  };
  const url = process.env.CONFORMANCE_SERVER_URL;
  const server = read("CONFORMANCE_SERVER");
  const actions = read("CONFORMANCE_ACTIONS");
  if (!Array.isArray(actions)) throw new UsageError("CONFORMANCE_ACTIONS must be a JSON array of actions");
  if (url === undefined) {
    const argv = Array.isArray(server) && server.length > 0 && server.every((s) => typeof s === "string");
    if (!argv) throw new UsageError("set CONFORMANCE_SERVER (a JSON array: the server's argv) or CONFORMANCE_SERVER_URL");
  }
  return { url, server, actions, version: process.env.CONFORMANCE_PROTOCOL_VERSION };
}

function report(action, outcome, extra = {}) {
  process.stdout.write(JSON.stringify({ action, outcome, ...extra }) + "\n");
}

// The SDK rejects an aborted call with the abort reason when that reason is an McpError, and
// otherwise with an McpError whose code is RequestTimeout (-32001), the code of its own
// timeout. The adapter aborts with an McpError of its own, so the rejection *is* that object:
// identity tells a caller cancel from a deadline, whatever code either carries.
class CallerCancel extends McpError {
  constructor() {
    super(ErrorCode.RequestTimeout, "cancelled by the conformance adapter");
  }
}

function classify(error) {
  if (error instanceof CallerCancel) return "cancelled";
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) return "timeout";
  return "error";
}

function resultText(result) {
  return (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

async function call(client, index, action) {
  const controller = new AbortController();
  const cancel = () => controller.abort(new CallerCancel());
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
      report(index, "result", { text: resultText(result), ...progress });
    }
  } catch (error) {
    report(index, classify(error), { text: String(error), ...progress });
  } finally {
    clearTimeout(timer);
  }
}

function transportFor(env) {
  if (env.url !== undefined) return new StreamableHTTPClientTransport(new URL(env.url));
  return new StdioClientTransport({ command: env.server[0], args: env.server.slice(1), stderr: "inherit" });
}

// Ends the session the way the SDK offers: over HTTP `close()` only aborts the open streams,
// so the session is ended with `terminateSession()` (DELETE) first; over stdio `close()` ends
// the server's stdin, waits 2 s, then sends SIGTERM, waits 2 s more, then SIGKILL.
async function end(client, transport) {
  if (transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
    await transport.terminateSession().catch((error) => log(`terminateSession failed: ${error}`));
  }
  await client.close();
}

async function main() {
  const env = environment();
  if (env.version !== undefined && env.version !== LATEST_PROTOCOL_VERSION) {
    log(`the harness plays ${env.version}; the SDK always asks for ${LATEST_PROTOCOL_VERSION} (it cannot be chosen)`);
  }
  let client;
  let transport;
  const pending = [];
  let exitIndex;
  for (const [index, action] of env.actions.entries()) {
    if (action.connect !== undefined) {
      transport = transportFor(env);
      client = new Client({ name: "conformance-adapter-typescript", version: "0.2.0" });
      const options = action.timeout_ms !== undefined ? { timeout: action.timeout_ms } : {};
      const closed = new Promise((resolve) => (client.onclose = resolve));
      try {
        await client.connect(transport, options);
        report(index, "result");
      } catch (error) {
        // The session is closed before the outcome is reported. A failed connect starts
        // closing the transport itself without waiting (stdio: the server's stdin is ended,
        // then SIGTERM after 2 s and SIGKILL after 2 s more), so the adapter waits for the
        // transport's close event, at most 5 s.
        await client.close().catch(() => {});
        await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 5000))]);
        report(index, classify(error), { text: String(error) });
        return;
      }
    } else if (action.sleep_ms !== undefined) {
      await new Promise((resolve) => setTimeout(resolve, action.sleep_ms));
      report(index, "result");
    } else if (action.exit !== undefined) {
      exitIndex = index;
      break;
    } else if (client === undefined) {
      report(index, "error", { text: "no session: the case must connect first" });
    } else if (action.concurrent) {
      pending.push(call(client, index, action));
    } else {
      await call(client, index, action);
    }
  }
  await Promise.all(pending);
  if (client) await end(client, transport);
  if (exitIndex !== undefined) report(exitIndex, "result");
}

main().then(
  () => process.exit(0),
  (error) => {
    log(error?.stack ?? String(error));
    process.exit(error instanceof UsageError ? 2 : 1);
  },
);
