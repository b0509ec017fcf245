// The TypeScript SDK's own client (npm @modelcontextprotocol/sdk 1.x, protocol 2025-11-25) against `ai-bridge serve`.
// Driven by tests/test_third_party_clients.py: argv[2] is a JSON object {command, args, env, cwd, scenario, ...};
// with `url` (and `headers`) it connects over Streamable HTTP instead (`serve --http-port`).
// The outcome is one JSON line on stdout. Scenarios:
//   list   tools/list; every input and output schema compiled by Ajv in strict mode; roots answered with `root`;
//          bridge_status called (its structured content checked against the output schema by the SDK).
//   task   the ask `tool` with `arguments` as a task (experimental.tasks.callToolStream) to its end;
//          with `cancel: true`, tasks/cancel once the partial answer shows, then tasks/get.
//   calls  each of `calls` ([{name, arguments}]) with Client.callTool, which checks structuredContent against the
//          tool's outputSchema (error results too): per call what the client hands its user, the result (isError,
//          text, structuredContent) or what it threw (code, message).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Ajv } from "ajv";

const spec = JSON.parse(process.argv[2]);
const out = {};

const client = new Client({ name: "ai-bridge-tests", version: "1" },
  { capabilities: spec.root ? { roots: { listChanged: true } } : {} });
if (spec.root) {
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: spec.root, name: "root" }] }));
}
const transport = spec.url
  ? new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers ?? {} } })
  : new StdioClientTransport({ command: spec.command, args: spec.args, env: spec.env, cwd: spec.cwd,
    stderr: "inherit" });
await client.connect(transport);
out.serverCapabilities = client.getServerCapabilities();

try {
  if (spec.scenario === "list") {
    const { tools } = await client.listTools();
    const ajv = new Ajv({ strict: true, allErrors: true });
    out.tools = {};
    for (const tool of tools) {
      const compiled = {};
      for (const key of ["inputSchema", "outputSchema"]) {
        if (!tool[key]) continue;
        try {
          ajv.compile(tool[key]);
          compiled[key] = "ok";
        } catch (e) {
          compiled[key] = String(e.message ?? e);
        }
      }
      out.tools[tool.name] = { annotations: tool.annotations, execution: tool.execution ?? null, compiled };
    }
    const status = await client.callTool({ name: "bridge_status", arguments: {} });
    out.status = { isError: status.isError ?? false, project: status.structuredContent?.project };
    const unknown = await client.callTool({ name: "no_such_tool", arguments: {} }).then(
      (r) => ({ result: r }), (e) => ({ code: e.code, message: e.message }));
    out.unknownTool = unknown;
  } else if (spec.scenario === "calls") {
    await client.listTools();  // callTool validates against the output schemas the last listing gave
    out.calls = [];
    for (const call of spec.calls) {
      out.calls.push(await client.callTool({ name: call.name, arguments: call.arguments }).then(
        (r) => ({ isError: r.isError ?? false, text: r.content.filter((c) => c.type === "text").map((c) => c.text)
          .join("\n"), structuredContent: r.structuredContent ?? null }),
        (e) => ({ threw: { code: e.code ?? null, message: String(e.message ?? e) } })));
    }
  } else if (spec.scenario === "task") {
    out.messages = [];
    out.progress = [];
    let cancelled = false;
    const stream = client.experimental.tasks.callToolStream(
      { name: spec.tool, arguments: spec.arguments }, CallToolResultSchema,
      { task: { ttl: 600000 }, timeout: 600000, onprogress: (p) => out.progress.push(p.message ?? "") });
    for await (const message of stream) {
      const entry = { type: message.type };
      if (message.task) entry.task = { taskId: message.task.taskId, status: message.task.status,
                                       statusMessage: message.task.statusMessage ?? null };
      if (message.result) entry.result = message.result;
      if (message.error) entry.error = { code: message.error.code, message: message.error.message };
      out.messages.push(entry);
      const answering = message.task?.statusMessage?.includes("is answering");
      if (spec.cancel && !cancelled && message.type === "taskStatus" && answering) {
        cancelled = true;
        await client.experimental.tasks.cancelTask(message.task.taskId);
        out.afterCancel = (await client.experimental.tasks.getTask(message.task.taskId)).status;
      }
    }
  }
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
