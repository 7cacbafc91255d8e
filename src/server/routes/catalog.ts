import type { FastifyInstance, FastifyRequest } from 'fastify';
import { redactSecrets } from '../../config/catalog-overlay.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { CatalogEntryKind, StoredCatalogEntry } from '../../store/catalog-entries.js';
import type { CatalogSync } from '../catalog-sync.js';
import { actorOf, requireAdmin } from './admin-input.js';

type Loose = Record<string, unknown>;

/** Largest body of a catalog `PUT` (one entry), in bytes. */
const MAX_ENTRY_BYTES = 256 * 1024;

/** One entry as the catalog API shows it: where it comes from and its config, secrets redacted. */
interface CatalogEntryObject {
  kind: CatalogEntryKind;
  id: string;
  /** `file`: the config file's (read-only here); `database`: entered through this API. */
  source: 'file' | 'database';
  /** The entry in the config file's shape; secret values read `[redacted]`. */
  entry: Loose;
  /** ISO 8601 (database entries only). */
  created_at?: string;
  updated_at?: string;
  updated_by?: string | null;
  /** A database entry whose id the file now also has: not served (the file wins). */
  shadowed?: true;
}

function stored(e: StoredCatalogEntry, shadowed: boolean): CatalogEntryObject {
  return {
    kind: e.kind,
    id: e.id,
    source: 'database',
    entry: redactSecrets({ id: e.id, ...e.entry }),
    created_at: new Date(e.createdAt).toISOString(),
    updated_at: new Date(e.updatedAt).toISOString(),
    updated_by: e.updatedBy,
    ...(shadowed ? { shadowed: true as const } : {}),
  };
}


/** The body of a `PUT`: one config-file entry (an object; its `id`, when present, must be the path's). */
function entryBody(req: FastifyRequest, id: string): Loose {
  const body = req.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new GatewayError('invalid_request', 'the body must be one entry as a JSON object, in the config file\'s shape', { param: 'body' });
  const given = (body as Loose).id;
  if (given !== undefined && given !== id) throw new GatewayError('invalid_request', `id: the body says ${JSON.stringify(given)} but the path says ${JSON.stringify(id)}`, { param: 'id' });
  return body as Loose;
}

/**
 * The catalog without a redeploy (admin key, issue 23 item 6), docs/catalog.md:
 * - `GET /v1/catalog`: every provider and model in force, each with `source` `file` or
 *   `database`, secrets redacted, and the stored catalog's `revision`;
 * - `PUT /v1/catalog/providers/{id}`, `DELETE /v1/catalog/providers/{id}`;
 * - `PUT /v1/catalog/models/{author}/{slug}`, `DELETE /v1/catalog/models/{author}/{slug}`
 *   (the id's slash as it is, or as `%2F`).
 * A `PUT` takes the entry as the config file would hold it, validated with the file and the other
 * stored entries exactly as a file is; it is in force here at once and on every replica within
 * a second. A provider's secrets (`api_key`, `api_keys`, `headers`, Entra secrets) are stored
 * sealed with `OP_CATALOG_SECRET_KEY` and never shown again; a `PUT` that leaves one out keeps it.
 */
export function registerCatalogRoutes(app: FastifyInstance, catalog: () => CatalogSync): void {
  const what = 'catalog management';

  app.get('/v1/catalog', async (req) => {
    requireAdmin(req, what);
    const sync = catalog();
    const file = sync.fileConfig().config;
    const fileProviders = new Set(file.providers.map((p) => p.id));
    const fileModels = new Set(file.models.map((m) => m.id));
    const fromFile = (kind: CatalogEntryKind, e: { id: string }): CatalogEntryObject => ({ kind, id: e.id, source: 'file', entry: redactSecrets(e as unknown as Loose) });
    const db = sync.entries();
    const shadowed = (e: StoredCatalogEntry) => (e.kind === 'provider' ? fileProviders : fileModels).has(e.id);
    return {
      revision: sync.revision(),
      providers: [...file.providers.map((p) => fromFile('provider', p)), ...db.filter((e) => e.kind === 'provider').map((e) => stored(e, shadowed(e)))],
      models: [...file.models.map((m) => fromFile('model', m)), ...db.filter((e) => e.kind === 'model').map((e) => stored(e, shadowed(e)))],
    };
  });

  const put = (kind: CatalogEntryKind) => async (req: FastifyRequest) => {
    requireAdmin(req, what);
    const id = idOf(req, kind);
    const written = await catalog().change({ op: 'put', kind, id, entry: entryBody(req, id) }, actorOf(req));
    return { revision: catalog().revision(), data: stored(written!, false) };
  };
  const remove = (kind: CatalogEntryKind) => async (req: FastifyRequest) => {
    requireAdmin(req, what);
    const id = idOf(req, kind);
    await catalog().change({ op: 'delete', kind, id }, actorOf(req));
    return { revision: catalog().revision(), data: { kind, id, deleted: true } };
  };
  // One entry is small: a larger body (a flood of headers or endpoints) is a 413 before it is parsed.
  const bodyLimit = MAX_ENTRY_BYTES;
  app.put('/v1/catalog/providers/:id', { bodyLimit }, put('provider'));
  app.delete('/v1/catalog/providers/:id', remove('provider'));
  app.put('/v1/catalog/models/*', { bodyLimit }, put('model'));
  app.delete('/v1/catalog/models/*', remove('model'));
}

/** The entry id of the path: `:id` for providers, the rest of the path for models (`a/b` or `a%2Fb`). */
function idOf(req: FastifyRequest, kind: CatalogEntryKind): string {
  const params = req.params as Record<string, string>;
  const raw = kind === 'provider' ? params.id : params['*'];
  let id: string;
  try {
    id = decodeURIComponent(raw ?? '');
  } catch {
    throw new GatewayError('invalid_request', 'the id in the path is not valid percent-encoding', { param: 'id' });
  }
  if (id === '') throw new GatewayError('invalid_request', `the path names no ${kind}`, { param: 'id' });
  return id;
}
