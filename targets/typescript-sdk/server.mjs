// The conformance fixture profile (work, ping, echo, sleep, ticker, cancellations) on the
// official TypeScript SDK: McpServer + StdioServerTransport. Cancellation is observed through
// the handler's AbortSignal (`extra.signal`); progress goes out through `extra.sendNotification`.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "typescript-sdk-fixture", version: "0.1.0" });

// Ids (exact JSON values, in order) of requests whose handler observed its cancellation.
const observed = [];

const text = (t) => ({ content: [{ type: "text", text: t }] });

// Resolves never; rejects once the request is cancelled, after recording its id.
function untilCancelled(extra, cleanup = () => {}) {
  return new Promise((_, reject) => {
    const stop = () => {
      cleanup();
      observed.push(extra.requestId);
      reject(extra.signal.reason ?? new Error("cancelled"));
    };
    if (extra.signal.aborted) stop();
    else extra.signal.addEventListener("abort", stop, { once: true });
  });
}

const progress = (extra, params) => {
  const token = extra._meta?.progressToken;
  if (token === undefined) return Promise.resolve();
  return extra.sendNotification({
    method: "notifications/progress",
    params: { progressToken: token, ...params },
  });
};

server.registerTool("work", { description: "Progress once, then run until cancelled" }, async (extra) => {
  await progress(extra, { progress: 0, message: "Started" });
  return untilCancelled(extra);
});

server.registerTool("ping", { description: "Liveness probe" }, async () => text("Server: still available"));

server.registerTool(
  "echo",
  { description: "Echo the text", inputSchema: { text: z.string() } },
  async ({ text: t }) => text(t),
);

server.registerTool(
  "sleep",
  { description: "Answer after ms milliseconds", inputSchema: { ms: z.number().int().min(0) } },
  async ({ ms }, extra) => {
    let timer;
    const done = new Promise((resolve) => {
      timer = setTimeout(() => resolve(text("slept")), ms);
    });
    return Promise.race([done, untilCancelled(extra, () => clearTimeout(timer))]);
  },
);

server.registerTool(
  "ticker",
  { description: "Progress 1, 2, 3, ... every interval_ms until cancelled", inputSchema: { interval_ms: z.number().int().min(1) } },
  async ({ interval_ms }, extra) => {
    let n = 0;
    const timer = setInterval(() => {
      n += 1;
      progress(extra, { progress: n }).catch(() => {});
    }, interval_ms);
    return untilCancelled(extra, () => clearInterval(timer));
  },
);

server.registerTool("cancellations", { description: "Ids of requests that observed their cancellation" }, async () =>
  text(JSON.stringify(observed)),
);

await server.connect(new StdioServerTransport());
