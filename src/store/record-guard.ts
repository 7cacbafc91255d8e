import { boundTokens, MAX_USAGE_TOKENS, USAGE_CLAMPED } from '../accounting/usage-bounds.js';
import type { GenerationsTable } from './schema.js';
import { isDatabaseUnreachable } from './database.js';

/**
 * Guards of the record writer: keep every row inside what its columns hold, reduce a row the
 * database refuses to a form it accepts, and tell a refused row from a database that cannot be
 * written at all.
 */

/** Largest cost of one generation record, in picodollars: USD 1,000,000 (64-bit columns hold 9.2e18). */
export const MAX_RECORD_COST_PICO = 10n ** 18n;

const TOKEN_COLUMNS = ['prompt_tokens', 'completion_tokens', 'reasoning_tokens', 'cached_tokens', 'cache_write_tokens'] as const;

/** A duration column made a whole number of ms in [0, 2^31). */
function boundMs(n: number): number {
  return Number.isFinite(n) ? Math.min(Math.max(Math.round(n), 0), 2 ** 31 - 1) : 0;
}

function boundCost(c: bigint | number): bigint | number {
  if (typeof c === 'bigint') return c > MAX_RECORD_COST_PICO ? MAX_RECORD_COST_PICO : c < 0n ? 0n : c;
  if (Number.isNaN(c) || c < 0) return 0;
  return c > Number(MAX_RECORD_COST_PICO) ? MAX_RECORD_COST_PICO : Math.round(c);
}

/**
 * The row with every token count in [0, {@link MAX_USAGE_TOKENS}], its cost in
 * [0, {@link MAX_RECORD_COST_PICO}] and its durations whole ms; the same object when nothing
 * had to change, else a copy whose `detail.warnings` says `usage_clamped` and what was changed.
 */
export function boundRow(row: GenerationsTable): GenerationsTable {
  let out: GenerationsTable | null = null;
  const changed: string[] = [];
  for (const col of TOKEN_COLUMNS) {
    const v = row[col];
    const b = boundTokens(v);
    if (b === v) continue;
    out ??= { ...row };
    out[col] = b;
    changed.push(`${col} ${String(v)}`);
  }
  const cost = boundCost(row.cost_pico);
  if (cost !== row.cost_pico) {
    out ??= { ...row };
    out.cost_pico = cost;
    changed.push(`cost_pico ${String(row.cost_pico)}`);
  }
  const latency = boundMs(row.latency_ms);
  const ttft = row.ttft_ms === null ? null : boundMs(row.ttft_ms);
  if (latency !== row.latency_ms || ttft !== row.ttft_ms) {
    out ??= { ...row };
    out.latency_ms = latency;
    out.ttft_ms = ttft;
  }
  if (!out) return row;
  if (changed.length > 0) {
    const warning = `${USAGE_CLAMPED}: ${changed.join(', ')} (bounds: ${MAX_USAGE_TOKENS} tokens, ${MAX_RECORD_COST_PICO} picodollars)`;
    try {
      const detail = JSON.parse(row.detail) as { warnings?: unknown };
      detail.warnings = [...(Array.isArray(detail.warnings) ? detail.warnings : []), warning];
      out.detail = JSON.stringify(detail);
    } catch {
      out.detail = JSON.stringify({ warnings: [warning] });
    }
  }
  return out;
}

function validTags(tags: unknown): boolean {
  try {
    const t = JSON.parse(String(tags)) as unknown;
    return Array.isArray(t) && t.every((x) => typeof x === 'string');
  } catch {
    return false;
  }
}

const text = (v: unknown, max: number): string | null => (typeof v === 'string' ? v.slice(0, max) : null);

/**
 * What is left of a row the database refused: who, when, which model and how it ended, without
 * usage, cost or text, and with the refusal in `detail.record_error`.
 */
export function degradedRow(row: GenerationsTable, err: unknown): GenerationsTable {
  const e = describeWriteError(err);
  return {
    id: String(row.id),
    request_id: String(row.request_id),
    created_at: Number.isFinite(row.created_at) ? Math.round(row.created_at) : Date.now(),
    key_id: text(row.key_id, 200),
    requested_model: String(row.requested_model).slice(0, 500),
    served_model: text(row.served_model, 500),
    provider: text(row.provider, 200),
    endpoint: text(row.endpoint, 500),
    upstream_model: text(row.upstream_model, 500),
    status: String(row.status),
    error_code: text(row.error_code, 200),
    error_message: text(row.error_message, 2000),
    http_status: Number.isInteger(row.http_status) ? row.http_status : 0,
    finish_reason: text(row.finish_reason, 100),
    native_finish_reason: text(row.native_finish_reason, 100),
    api: String(row.api),
    streamed: row.streamed ? 1 : 0,
    cancelled: row.cancelled ? 1 : 0,
    prompt_tokens: null,
    completion_tokens: null,
    reasoning_tokens: null,
    cached_tokens: null,
    cache_write_tokens: null,
    usage_source: null,
    cost_pico: 0,
    latency_ms: boundMs(Number(row.latency_ms)),
    ttft_ms: null,
    tags: validTags(row.tags) ? row.tags : '[]',
    session: text(row.session, 500),
    end_user: text(row.end_user, 500),
    retention: String(row.retention),
    detail: JSON.stringify({ record_error: `${e.code}: ${e.message}`.slice(0, 1000) }),
    content: null,
  };
}

/** A write error's code (`SQLITE_FULL`, `RangeError`, a PostgreSQL SQLSTATE) and message. */
export function describeWriteError(err: unknown): { code: string; message: string } {
  const e = err as { code?: unknown; name?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' && e.code ? e.code : typeof e?.name === 'string' ? e.name : 'Error';
  return { code, message: typeof e?.message === 'string' ? e.message : String(err) };
}

/**
 * True when an error says the database cannot be written at all (disk full, I/O error,
 * read-only, locked, gone, connection lost): the write is retried later. False for an error
 * about the rows themselves (a value out of range, a constraint), which row-by-row writing isolates.
 */
export function isEnvironmentError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  // SQLite result codes (better-sqlite3 names them; extended codes share the prefix).
  if (/^SQLITE_(FULL|IOERR|READONLY|BUSY|LOCKED|CANTOPEN|NOMEM|CORRUPT|NOTADB|PERM|PROTOCOL|AUTH)/.test(code)) return true;
  // A PostgreSQL server that cannot be reached or dropped the connection (an outage, not a bad row).
  if (isDatabaseUnreachable(err)) return true;
  // PostgreSQL SQLSTATE classes: 53 insufficient resources (53100 disk full), 58 system error.
  if (/^(53|58)[0-9A-Z]{3}$/.test(code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  // "cannot rollback": SQLite already rolled the transaction back itself, which it does only on
  // a full disk, an I/O error, a busy database or no memory (e.g. when the COMMIT failed).
  return /database connection is not open|driver has already been destroyed|cannot rollback - no transaction is active/i.test(message);
}
