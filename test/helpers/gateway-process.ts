/**
 * A gateway in a process of its own, for tests that kill it (SIGKILL): opens
 * `OP_DATABASE_URL`, migrates, builds the gateway from the JSON config in `OP_TEST_CONFIG`,
 * listens on 127.0.0.1 port 0 and prints `PORT <n>` on stdout. Run with
 * `node --import tsx test/helpers/gateway-process.ts`.
 */
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../src/config/load.js';
import { buildGateway } from '../../src/server/app.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';

const store = openDatabase(process.env.OP_DATABASE_URL);
await migrate(store.db);
const config = parseConfig(JSON.parse(process.env.OP_TEST_CONFIG ?? '{}'), 'test config');
const gateway = buildGateway({ loaded: { config, source: 'test' }, db: store.db, adminKey: 'admin-test-key', logger: false, purgeIntervalMs: 0 });
await gateway.app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`PORT ${(gateway.app.server.address() as AddressInfo).port}\n`);
