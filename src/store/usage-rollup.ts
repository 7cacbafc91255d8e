import { sql, type Transaction } from 'kysely';
import { LATENCY_BUCKETS_MS, type Database, type GenerationsTable } from './schema.js';

/** Index of the histogram bucket a duration (ms) falls in. */
export function latencyBucket(ms: number): number {
  const i = LATENCY_BUCKETS_MS.findIndex((b) => ms <= b);
  return i === -1 ? LATENCY_BUCKETS_MS.length : i;
}

const HOUR = 3_600_000;

interface Acc {
  hour: number;
  key_id: string;
  tag?: string;
  model: string;
  provider: string;
  requests: number;
  errors: number;
  cancelled: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  cached_tokens: number;
  cost_pico: bigint;
  latency: number[];
  ttft: number[];
}

function emptyHist(): number[] {
  return new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);
}

function accumulate(map: Map<string, Acc>, row: GenerationsTable, tag?: string): void {
  const hour = Math.floor(Number(row.created_at) / HOUR) * HOUR;
  const model = row.served_model ?? row.requested_model;
  const provider = row.provider ?? '';
  const keyId = row.key_id ?? '';
  const id = `${hour}|${keyId}|${tag ?? ''}|${model}|${provider}`;
  let a = map.get(id);
  if (!a) {
    a = { hour, key_id: keyId, model, provider, requests: 0, errors: 0, cancelled: 0, prompt_tokens: 0, completion_tokens: 0, reasoning_tokens: 0, cached_tokens: 0, cost_pico: 0n, latency: emptyHist(), ttft: emptyHist() };
    if (tag !== undefined) a.tag = tag;
    map.set(id, a);
  }
  a.requests++;
  if (row.status === 'error') a.errors++;
  if (row.status === 'cancelled') a.cancelled++;
  a.prompt_tokens += row.prompt_tokens ?? 0;
  a.completion_tokens += row.completion_tokens ?? 0;
  a.reasoning_tokens += row.reasoning_tokens ?? 0;
  a.cached_tokens += row.cached_tokens ?? 0;
  a.cost_pico += BigInt(row.cost_pico);
  a.latency[latencyBucket(row.latency_ms)]!++;
  if (row.ttft_ms !== null) a.ttft[latencyBucket(row.ttft_ms)]!++;
}

/** Add two JSON histograms (SQLite/PostgreSQL-neutral: merged in JS after a read). */
function mergeHist(a: string, b: number[]): string {
  const x = JSON.parse(a) as number[];
  return JSON.stringify(b.map((v, i) => v + (x[i] ?? 0)));
}

async function upsert(trx: Transaction<Database>, table: 'usage_hourly' | 'usage_hourly_tags', a: Acc): Promise<void> {
  let q = trx.selectFrom(table).select(['latency_hist', 'ttft_hist']).where('hour', '=', a.hour).where('key_id', '=', a.key_id).where('model', '=', a.model).where('provider', '=', a.provider);
  if (table === 'usage_hourly_tags') q = q.where(sql.ref('tag'), '=', a.tag!);
  const existing = await q.executeTakeFirst();
  const values = {
    hour: a.hour, key_id: a.key_id, model: a.model, provider: a.provider, requests: a.requests, errors: a.errors, cancelled: a.cancelled,
    prompt_tokens: a.prompt_tokens, completion_tokens: a.completion_tokens, reasoning_tokens: a.reasoning_tokens, cached_tokens: a.cached_tokens,
    cost_pico: a.cost_pico, latency_hist: JSON.stringify(a.latency), ttft_hist: JSON.stringify(a.ttft),
  };
  if (!existing) {
    await trx.insertInto(table).values((table === 'usage_hourly_tags' ? { ...values, tag: a.tag! } : values) as never).execute();
    return;
  }
  let u = trx
    .updateTable(table)
    .set((eb) => ({
      requests: eb('requests', '+', a.requests),
      errors: eb('errors', '+', a.errors),
      cancelled: eb('cancelled', '+', a.cancelled),
      prompt_tokens: eb('prompt_tokens', '+', a.prompt_tokens),
      completion_tokens: eb('completion_tokens', '+', a.completion_tokens),
      reasoning_tokens: eb('reasoning_tokens', '+', a.reasoning_tokens),
      cached_tokens: eb('cached_tokens', '+', a.cached_tokens),
      cost_pico: eb('cost_pico', '+', a.cost_pico),
      latency_hist: mergeHist(existing.latency_hist, a.latency),
      ttft_hist: mergeHist(existing.ttft_hist, a.ttft),
    }))
    .where('hour', '=', a.hour)
    .where('key_id', '=', a.key_id)
    .where('model', '=', a.model)
    .where('provider', '=', a.provider);
  if (table === 'usage_hourly_tags') u = u.where(sql.ref('tag'), '=', a.tag!);
  await u.execute();
}

/**
 * Count a batch of generation rows into the hourly rollups and the tag index, inside the
 * writer's transaction. Rows are grouped first, so a batch costs one upsert per group.
 */
export async function applyRollups(trx: Transaction<Database>, rows: readonly GenerationsTable[]): Promise<void> {
  const plain = new Map<string, Acc>();
  const tagged = new Map<string, Acc>();
  const tagRows: Database['generation_tags'][] = [];
  for (const row of rows) {
    accumulate(plain, row);
    const tags = JSON.parse(row.tags) as string[];
    for (const tag of new Set(tags)) {
      accumulate(tagged, row, tag);
      tagRows.push({ generation_id: row.id, tag, created_at: row.created_at, key_id: row.key_id });
    }
  }
  for (const a of plain.values()) await upsert(trx, 'usage_hourly', a);
  for (const a of tagged.values()) await upsert(trx, 'usage_hourly_tags', a);
  for (let i = 0; i < tagRows.length; i += 100) await trx.insertInto('generation_tags').values(tagRows.slice(i, i + 100)).execute();
}
