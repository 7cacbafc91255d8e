/**
 * The dashboard's MCP page (issue 22 item 4) in headless Chromium: tool calls made through the
 * gateway's `/mcp` with the official SDK client, then the page shows each server with its
 * health and tools, the calls by tool and by key with exact counts, and the failed and refused
 * calls; another key sees only its own calls. Also `GET /v1/mcp/servers` (a down server says why).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Page } from 'playwright-core';
import { buildDashboard } from '../../scripts/build-dashboard.js';
import { createKey } from '../../src/store/keys.js';
import { chromiumMissing, launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const skip = chromiumMissing();

describe('dashboard MCP page in headless Chromium', { skip: skip ?? false, timeout: 240_000 }, () => {
  let weather: McpUpstream;
  let gw: TestGateway;
  let browser: TestBrowser;
  let alice: { id: string; secret: string };
  const clients: Client[] = [];

  const connect = async (secret: string): Promise<Client> => {
    const client = new Client({ name: 'dashboard-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
    clients.push(client);
    return client;
  };
  const signIn = async (page: Page, key: string) => {
    await page.goto(`${gw.origin}/`);
    await page.fill('#key', key);
    await page.click('#signin button[type=submit]');
  };

  before(async () => {
    await buildDashboard();
    weather = await startMcpUpstream('weather');
    gw = await startGateway({
      mcp_servers: [
        { id: 'weather', transport: 'streamable_http', url: weather.url },
        // Nothing listens on port 9: the server is down, and says why.
        { id: 'gone', transport: 'streamable_http', url: 'http://127.0.0.1:9/mcp', timeout_ms: 2000 },
      ],
    });
    const { key, secret } = await createKey(gw.store.db, 'alice', null, { allowed_tools: ['weather__echo', 'weather__fail'] });
    alice = { id: key.id, secret };
    const admin = await connect(gw.adminKey);
    for (const text of ['a', 'b', 'c']) await admin.callTool({ name: 'weather__echo', arguments: { text } });
    await admin.callTool({ name: 'weather__add', arguments: { a: 1, b: 2 } });
    const a = await connect(alice.secret);
    await a.callTool({ name: 'weather__echo', arguments: { text: 'alice' } });
    await a.callTool({ name: 'weather__fail' });
    await a.callTool({ name: 'weather__add', arguments: { a: 1, b: 1 } }).catch(() => undefined); // refused: not in her allowed_tools
    await gw.gateway.runtime().mcpCalls.flush();
    browser = await launchBrowser();
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await browser?.close();
    await gw?.close();
    await weather?.close();
  });

  test('GET /v1/mcp/servers: each server of the key\'s view with its tools, or why they could not be listed', async () => {
    const res = await fetch(`${gw.origin}/v1/mcp/servers`, { headers: { authorization: `Bearer ${alice.secret}` } });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 200);
    assert.deepEqual(body.data.map((s: Json) => [s.id, s.transport, s.tools, s.error]), [['weather', 'streamable_http', ['weather__echo', 'weather__fail'], null]], 'her allowed_tools name only weather');
    const all = (await (await fetch(`${gw.origin}/v1/mcp/servers`, { headers: { authorization: `Bearer ${gw.adminKey}` } })).json()) as Json;
    const gone = all.data.find((s: Json) => s.id === 'gone');
    assert.equal(gone.tools, null);
    assert.match(gone.error, /gone|connect|ECONNREFUSED|fetch failed/i);
    assert.ok(all.data.find((s: Json) => s.id === 'weather').tools.includes('weather__add'));
  });

  test('admin: servers with health and tools, calls by tool and by key, failed and refused calls', async () => {
    const { page, problems } = await browser.newPage();
    await signIn(page, gw.adminKey);
    await page.click('.nav a[data-nav=mcp]');
    const weatherRow = page.locator('#mcp-servers tr[data-mcp-server="weather"]');
    await weatherRow.waitFor();
    assert.match(await weatherRow.innerText(), /healthy/);
    assert.match(await weatherRow.innerText(), /weather__echo/);
    assert.match(await page.locator('#mcp-servers tr[data-mcp-server="gone"]').innerText(), /down/);
    const echo = (await page.locator('#mcp-tools tr[data-mcp-tool="weather__echo"] td').allInnerTexts()).map((t) => t.trim());
    assert.deepEqual(echo.slice(0, 7), ['weather', 'echo', '4', '4', '0', '0', '0']);
    const add = (await page.locator('#mcp-tools tr[data-mcp-tool="weather__add"] td').allInnerTexts()).map((t) => t.trim());
    assert.deepEqual(add.slice(2, 7), ['2', '1', '0', '0', '1']);
    const aliceRow = (await page.locator(`#mcp-keys tr[data-mcp-key="${alice.id}"] td`).allInnerTexts()).map((t) => t.trim());
    assert.deepEqual(aliceRow, [alice.id, '3', '1', '1', '0', '1']);
    const adminRow = (await page.locator('#mcp-keys tr[data-mcp-key="admin"] td').allInnerTexts()).map((t) => t.trim());
    assert.deepEqual(adminRow, ['admin', '4', '4', '0', '0', '0']);
    const failures = await page.locator('#mcp-errors tbody tr').allInnerTexts();
    assert.equal(failures.length, 1);
    assert.match(failures[0]!, /weather__add[\s\S]*refused[\s\S]*mcp_tool_not_allowed/);
    await browser.screenshot(page, 'mcp');
    assert.deepEqual(problems.list, [], 'console errors, failed loads or exceptions on the page');
    await page.close();
  });

  test('another key sees only its own calls, and no calls-by-key card', async () => {
    const { page, problems } = await browser.newPage();
    await signIn(page, alice.secret);
    await page.click('.nav a[data-nav=mcp]');
    await page.locator('#mcp-tools tr[data-mcp-tool="weather__echo"]').waitFor();
    const echo = (await page.locator('#mcp-tools tr[data-mcp-tool="weather__echo"] td').allInnerTexts()).map((t) => t.trim());
    assert.equal(echo[2], '1');
    assert.equal(await page.locator('#mcp-keys').count(), 0);
    assert.equal(await page.locator('#mcp-servers tr[data-mcp-server="gone"]').count(), 0);
    assert.deepEqual(problems.list, []);
    await page.close();
  });
});
