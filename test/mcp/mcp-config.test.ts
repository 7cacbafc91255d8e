import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { keyAllowsTool, keySeesServer, matchesPattern, serverHides, splitNamespaced } from '../../src/mcp/tool-patterns.js';

function issuesOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.issues;
  }
  assert.fail('expected a ConfigError');
}

test('mcp_servers: every problem in one report, with its path', () => {
  const issues = issuesOf(() =>
    parseConfig(
      {
        mcp_servers: [
          { id: 'a__b', transport: 'streamable_http', url: 'http://x/mcp' },
          { id: 'has.dot', transport: 'sse', url: 'ftp://x/sse' },
          { id: 'ok', transport: 'stdio' },
          { id: 'ok', transport: 'stdio', command: 'node', shell: true },
          { id: 'web', transport: 'websocket', url: 'ws://x' },
          { id: 'h', transport: 'streamable_http', url: 'http://x/mcp', headers: { Authorization: '${MCP_UNSET_TOKEN}' }, timeout_ms: 0 },
          { id: 'sse', transport: 'sse', url: 'http://x/sse' },
        ],
      },
      'x.yaml',
      {},
    ),
  );
  assert.deepEqual([...issues].sort(), [
    'mcp_servers[0].id: must not contain "__": it separates the server id from the tool name',
    'mcp_servers[1].id: must be letters, digits, "_" or "-" (starting with a letter or digit)',
    'mcp_servers[1].url: must start with http:// or https://',
    'mcp_servers[2].command: Required',
    'mcp_servers[3].id: duplicate MCP server id "ok" (also mcp_servers[2])',
    'mcp_servers[3].shell: unknown key',
    "mcp_servers[4].transport: Invalid discriminator value. Expected 'streamable_http' | 'sse' | 'stdio'",
    'mcp_servers[5].headers.Authorization: environment variable MCP_UNSET_TOKEN is not set',
    'mcp_servers[5].timeout_ms: Number must be greater than or equal to 1',
    'mcp_servers[6].id: must not be "sse" or "messages": /mcp/sse and /mcp/messages are the gateway\'s legacy HTTP+SSE endpoints',
  ].sort());
});

test('mcp_servers: defaults, and ${VAR} in headers and env like provider keys', () => {
  const config = parseConfig({ mcp_servers: [
    { id: 'gh', transport: 'streamable_http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer ${GH_TOKEN}' } },
    { id: 'fs', transport: 'stdio', command: 'npx', args: ['-y', 'server-fs'], env: { ROOT: '${FS_ROOT:-/srv}' } },
  ] }, 'x.yaml', { GH_TOKEN: 'ghp_123456' });
  const [gh, fs] = config.mcp_servers;
  assert.deepEqual(gh, { id: 'gh', transport: 'streamable_http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer ghp_123456' }, allowed_tools: [], denied_tools: [], timeout_ms: 60_000, max_result_bytes: 10 * 1024 * 1024 });
  assert.deepEqual(fs, { id: 'fs', transport: 'stdio', command: 'npx', args: ['-y', 'server-fs'], env: { ROOT: '/srv' }, allowed_tools: [], denied_tools: [], timeout_ms: 60_000, max_result_bytes: 10 * 1024 * 1024 });
  // Without secrets (keys create --models): headers and env are not read, their variables need not be set.
  const noSecrets = parseConfig({ mcp_servers: [{ id: 'gh', transport: 'sse', url: 'https://x/sse', headers: { Authorization: '${NOT_SET_AT_ALL}' } }] }, 'x.yaml', {}, { secrets: false });
  assert.deepEqual(noSecrets.mcp_servers[0]!.transport === 'sse' && noSecrets.mcp_servers[0]!.headers, {});
});

test('tool patterns: server lists over upstream names, key lists over server__tool or whole servers', () => {
  assert.equal(matchesPattern('get_*', 'get_forecast'), true);
  assert.equal(matchesPattern('get_*', 'set_forecast'), false);
  assert.equal(matchesPattern('a.b', 'aXb'), false, 'a dot is literal');
  assert.deepEqual(splitNamespaced('weather__get__raw'), { serverId: 'weather', name: 'get__raw' });
  assert.equal(splitNamespaced('plain'), undefined);
  const server = { id: 'w', allowed_tools: ['get_*', 'list'], denied_tools: ['get_secret'] };
  assert.equal(serverHides(server, 'get_forecast'), undefined);
  assert.match(serverHides(server, 'get_secret')!, /denied_tools pattern "get_secret"/);
  assert.match(serverHides(server, 'delete')!, /not in the allowed_tools of MCP server "w"/);
  assert.equal(keyAllowsTool([], 'w', 'anything'), true);
  assert.equal(keyAllowsTool(['weather'], 'weather', 'get'), true);
  assert.equal(keyAllowsTool(['weather'], 'weather2', 'get'), false);
  assert.equal(keyAllowsTool(['weather__get_*'], 'weather', 'get_x'), true);
  assert.equal(keyAllowsTool(['weather__get_*'], 'weather', 'set_x'), false);
  assert.equal(keyAllowsTool(['*__read'], 'files', 'read'), true);
  assert.equal(keySeesServer(['weather__get_*'], 'weather'), true);
  assert.equal(keySeesServer(['weather__get_*'], 'files'), false);
});
