import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { apiEntryRefusals, changedSecrets, entryIssuePath, keepOmittedSecrets, mapSecrets, mergeCatalog, redactSecrets, type OverlayEntry } from '../config/catalog-overlay.js';
import { ConfigError, parseConfigWithWarnings, type LoadedConfig } from '../config/load.js';
import { GatewayError } from '../errors/gateway-error.js';
import { audited, type AuditActor } from '../store/audit-log.js';
import { catalogRevision, loadCatalogSnapshot, writeCatalogChange, type CatalogEntryKind, type CatalogSnapshot, type StoredCatalogEntry } from '../store/catalog-entries.js';
import { gatewayErrorOf } from '../store/database.js';
import type { KeyChangeNotifier } from '../store/key-change-notifier.js';
import type { Database } from '../store/schema.js';
import { isSealed, SECRET_KEY_ENV, type SecretBox } from '../util/secret-box.js';

type Loose = Record<string, unknown>;

/** How long the start waits for the stored catalog entries (ms). */
const START_WAIT_MS = 3_000;

/** Where the catalog entered through the API is read from and written to, and how changes travel. */
export interface CatalogSyncOptions {
  db: Kysely<Database>;
  /** Seals the entries' secrets (`OP_CATALOG_SECRET_KEY`); without it, entries with secrets are refused. */
  box: SecretBox | undefined;
  log: FastifyBaseLogger;
  /** Put a merged config in force in this process (build-runtime's apply). */
  apply(loaded: LoadedConfig): void;
  /** Tells the other processes a change was written (Redis pub/sub), and hears theirs. */
  changes: KeyChangeNotifier;
  /** How often the revision is checked (ms; 0: never): 500 ms without Redis, a safety net with it. */
  pollMs: number;
}

/** A change asked for through the API: an entry put whole (`PUT`), or removed. */
export type CatalogRequest = { op: 'put'; kind: CatalogEntryKind; id: string; entry: Loose } | { op: 'delete'; kind: CatalogEntryKind; id: string };

/**
 * The config in force = the config file's, with the providers and models of the database's
 * catalog (issue 23 item 6) laid over it (config/catalog-overlay.ts), kept current on every
 * replica: a change made here is validated against the merged config exactly as a file is,
 * written under the catalog's revision (optimistic: a change racing another is re-validated),
 * applied at once here and announced to the others (Redis), which also check the revision every
 * `pollMs`. A merged config that does not validate on some replica (another file, another
 * secret key) leaves that replica on its previous one and says why in its log.
 */
export class CatalogSync {
  private file: LoadedConfig;
  private snapshot: CatalogSnapshot = { revision: 0, entries: [] };
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private unreachableSince = 0;
  /** The stored revision last found not to validate here (logged once). */
  private refusedRevision = -1;
  private writes: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: CatalogSyncOptions, file: LoadedConfig) {
    this.file = file;
    o.changes.onChange(() => void this.refresh());
  }

  /** The config file's config (without the stored entries). */
  fileConfig(): LoadedConfig {
    return this.file;
  }

  /** The stored entries at the revision in force here. */
  entries(): readonly StoredCatalogEntry[] {
    return this.snapshot.entries;
  }

  /** The revision in force here. */
  revision(): number {
    return this.snapshot.revision;
  }

  /**
   * Read the stored entries and put them in force (waiting at most {@link START_WAIT_MS}: a
   * database that hangs does not hold the start), then keep checking. Never throws: with the
   * database down at start the file alone serves until a check reads the entries.
   */
  async start(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), START_WAIT_MS)));
    if ((await Promise.race([this.refresh(true), waited])) === 'late') this.o.log.warn(`catalog: the stored entries were not read within ${START_WAIT_MS} ms of the start; serving the config file's until they are`);
    clearTimeout(timer);
    if (this.o.pollMs > 0) {
      this.timer = setInterval(() => void this.refresh(), this.o.pollMs);
      this.timer.unref();
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * A new config file (reload): merged with the stored entries and put in force.
   * @throws ConfigError when the file and the stored entries do not validate together (the
   * previous config keeps serving, as for an invalid file).
   */
  setFile(loaded: LoadedConfig): void {
    const merged = this.merge(loaded, this.snapshot.entries);
    this.file = loaded;
    this.o.apply(merged);
  }

  /** Re-read the entries if the revision moved (or `force`), and put them in force. */
  async refresh(force = false): Promise<void> {
    if (this.refreshing) return this.refreshing;
    this.refreshing = (async () => {
      try {
        if (!force) {
          const revision = await catalogRevision(this.o.db);
          if (revision === this.snapshot.revision || revision === this.refusedRevision) return;
        }
        const snap = await loadCatalogSnapshot(this.o.db);
        if (this.unreachableSince) this.o.log.info('catalog: the database answers again');
        this.unreachableSince = 0;
        // Revisions only grow: a snapshot older than the one in force (a change made here meanwhile) is dropped.
        if (snap.revision < this.snapshot.revision || (!force && snap.revision === this.snapshot.revision)) return;
        try {
          const merged = this.merge(this.file, snap.entries);
          this.snapshot = snap;
          this.o.apply(merged);
          if (snap.entries.length > 0 || !force) this.o.log.info({ revision: snap.revision, entries: snap.entries.length }, 'catalog: entries from the database in force');
        } catch (err) {
          // Said once per revision (the check comes back every pollMs).
          if (this.refusedRevision !== snap.revision) this.o.log.error({ revision: snap.revision, err: err instanceof Error ? err.message : err }, 'catalog: the database entries do not validate with this replica\'s config; the previous catalog keeps serving');
          this.refusedRevision = snap.revision;
        }
      } catch (err) {
        if (!this.unreachableSince) this.o.log.warn({ err: err instanceof Error ? err.message : err }, 'catalog: cannot read the stored entries; retrying');
        this.unreachableSince ||= Date.now();
      }
    })().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /**
   * Make a change through the API (one at a time per process): check, complete (omitted secrets
   * kept), validate the merged config, seal the secrets, write under the revision, apply, announce.
   * @returns the stored entry after the change (undefined after a delete).
   * @throws GatewayError `catalog_entry_read_only` (409: the file has the id), `not_found`,
   * `invalid_catalog_entry` (400, every issue in `metadata.issues`), `catalog_secret_key_missing`,
   * `catalog_conflict` (409: other changes kept coming), `database_unavailable`.
   */
  change(req: CatalogRequest, actor: AuditActor): Promise<StoredCatalogEntry | undefined> {
    const run = this.writes.then(() => this.changeNow(req, actor));
    this.writes = run.catch(() => {});
    return run;
  }

  private async changeNow(req: CatalogRequest, actor: AuditActor): Promise<StoredCatalogEntry | undefined> {
    const list = req.kind === 'provider' ? this.file.config.providers : this.file.config.models;
    // A stored entry the file now shadows may still be removed; nothing else of the file's ids is the API's.
    const shadowedDelete = req.op === 'delete' && this.snapshot.entries.some((e) => e.kind === req.kind && e.id === req.id);
    if (!shadowedDelete && list.some((e) => e.id === req.id)) throw new GatewayError('catalog_entry_read_only', `${req.kind} ${JSON.stringify(req.id)} comes from the config file and is read-only here; change it in the file`, { param: 'id' });
    for (let attempt = 0; attempt < 5; attempt++) {
      let snap: CatalogSnapshot;
      try {
        snap = await loadCatalogSnapshot(this.o.db);
      } catch (err) {
        throw gatewayErrorOf(err);
      }
      const stored = snap.entries.find((e) => e.kind === req.kind && e.id === req.id);
      let next: StoredCatalogEntry[];
      let written: StoredCatalogEntry | undefined;
      if (req.op === 'delete') {
        if (!stored) throw new GatewayError('not_found', `no ${req.kind} ${JSON.stringify(req.id)} in the stored catalog`, { param: 'id' });
        next = snap.entries.filter((e) => e !== stored);
      } else {
        const refusals = apiEntryRefusals(req.kind, req.entry);
        if (refusals.length > 0) throw invalid(refusals);
        const entry = req.kind === 'provider' ? keepOmittedSecrets(req.entry, stored?.entry) : { ...req.entry };
        delete entry.id;
        const now = Date.now();
        written = { kind: req.kind, id: req.id, entry: this.seal(entry), createdAt: stored?.createdAt ?? now, updatedAt: now, updatedBy: actor.id };
        next = stored ? snap.entries.map((e) => (e === stored ? written! : e)) : [...snap.entries, written];
      }
      this.merge(this.file, next, { kind: req.kind, id: req.id });
      let revision: number | 'conflict';
      try {
        // The change and its audit row (secrets redacted) commit together.
        const action = `catalog_${req.kind}.${req.op === 'delete' ? 'delete' : stored ? 'update' : 'create'}`;
        revision = await audited(this.o.db, actor, async (trx) => {
          const rev = await writeCatalogChange(trx, req.op === 'delete' ? req : { op: 'put', kind: req.kind, id: req.id, entry: written!.entry }, snap.revision, actor.id);
          // The audit row never holds a secret, but says which ones changed.
          const secretsChanged = changedSecrets(stored?.entry, written?.entry);
          const after = written ? { ...redactSecrets(written.entry), ...(secretsChanged.length ? { secrets_changed: secretsChanged } : {}) } : null;
          const change = { action, targetType: `catalog_${req.kind}`, targetId: req.id, before: stored ? redactSecrets(stored.entry) : null, after };
          return { result: rev, change: rev === 'conflict' ? undefined : change };
        });
      } catch (err) {
        throw gatewayErrorOf(err);
      }
      if (revision === 'conflict') continue;
      const merged = this.merge(this.file, next);
      this.snapshot = { revision, entries: next };
      this.o.apply(merged);
      this.o.changes.notify();
      this.o.log.info({ op: req.op, kind: req.kind, id: req.id, revision, actor: actor.id }, 'catalog: changed through the API');
      return written;
    }
    throw new GatewayError('catalog_conflict', 'the catalog kept changing while this change was validated; retry');
  }

  /** Seal the secrets not sealed yet. @throws GatewayError `catalog_secret_key_missing` when there are any and no key. */
  private seal(entry: Loose): Loose {
    return mapSecrets(entry, (value, path) => {
      if (isSealed(value)) return value;
      if (!this.o.box) throw new GatewayError('catalog_secret_key_missing', `${path.join('.')}: secrets entered through the API are stored encrypted, and ${SECRET_KEY_ENV} is not set on this gateway (32 bytes, hex or base64, the same on every replica)`, { param: path.join('.') });
      return this.o.box.seal(value);
    });
  }

  /**
   * The file's config with `entries` laid over it, validated as a file is.
   * @throws ConfigError (or GatewayError `invalid_catalog_entry` when `own` names the entry being written, with paths said from it).
   */
  private merge(file: LoadedConfig, entries: readonly StoredCatalogEntry[], own?: { kind: CatalogEntryKind; id: string }): LoadedConfig {
    if (entries.length === 0) return file;
    const open: OverlayEntry[] = [];
    const issues: string[] = [];
    for (const e of entries) {
      try {
        open.push({ kind: e.kind, id: e.id, entry: mapSecrets(e.entry, (v) => (isSealed(v) ? this.openSecret(v) : v)) });
      } catch (err) {
        issues.push(`${e.kind}s[${JSON.stringify(e.id)}]: cannot open its stored secrets: ${(err as Error).message}`);
      }
    }
    const { raw, shadowed } = mergeCatalog(file.config, open);
    try {
      if (issues.length > 0) throw new ConfigError('the stored catalog', issues);
      const { config, warnings } = parseConfigWithWarnings(raw, 'the config file and the stored catalog', process.env, { substitute: false });
      return { config, source: file.source, warnings: [...(file.warnings ?? []), ...warnings, ...shadowed.map((s) => `catalog: the stored ${s} is shadowed by the config file's entry of the same id (the file wins)`)] };
    } catch (err) {
      if (own && err instanceof ConfigError) throw invalid(err.issues.map((i) => entryIssuePath(i, raw, own)));
      throw err;
    }
  }

  private openSecret(sealed: string): string {
    if (!this.o.box) throw new Error(`${SECRET_KEY_ENV} is not set`);
    return this.o.box.open(sealed);
  }
}

function invalid(issues: readonly string[]): GatewayError {
  const first = issues[0] ?? '(entry): invalid';
  const param = first.slice(0, first.indexOf(': '));
  return new GatewayError('invalid_catalog_entry', issues.length === 1 ? first : `${issues.length} problems: ${issues.join('; ')}`, { param, metadata: { issues } });
}
