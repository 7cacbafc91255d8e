import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { McpGateway, McpRequestContext } from './mcp-gateway.js';

/**
 * An SDK `Client` connected to the MCP gateway in this process (the SDK's `InMemoryTransport`
 * pair, no HTTP), with a key's view: what `/mcp` (or `/mcp/{server}` with `ctx.only`) would
 * serve that key, its tool calls admitted and recorded by the gateway's observer like any
 * other. Used by the Responses API's `mcp` tool (pipeline/stages/mcp-tool-loop.ts). Close the
 * client to end the session and its upstream sessions.
 * @throws GatewayError `gateway_shutting_down` when the gateway is closing.
 */
export async function connectInProcess(gateway: McpGateway, ctx: McpRequestContext): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connectInProcess(serverSide, ctx);
  const client = new Client({ name: 'opinference-responses-mcp-tool', version: '1.0.0' });
  await client.connect(clientSide);
  return client;
}
