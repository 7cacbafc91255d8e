// Display formats. Money arrives as exact USD decimal strings and is shown without going
// through floating point (only the charts plot it as numbers).

const intFormat = new Intl.NumberFormat('en-US');
const groupThousands = (digits: string): string => digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** "0.000018" → "$0.000018", "12.5" → "$12.50", "1234" → "$1,234.00". Exact; at least 2 decimals. */
export function usd(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === '') return '—';
  if (typeof value === 'number') value = value.toFixed(12);
  const m = /^(-?)(\d*)(?:\.(\d*))?$/.exec(value.trim());
  if (!m) return `$${value}`;
  const [, sign, whole, frac = ''] = m;
  let f = frac.replace(/0+$/, '');
  if (f.length < 2) f = f.padEnd(2, '0');
  return `${sign}$${groupThousands(whole || '0')}.${f}`;
}

/**
 * Money rounded for a summary card, from the exact decimal string (no floating point): cents
 * from $1 up ("12.3456" → "$12.35", "1234.5" → "$1,234.50"); below $1 two significant digits,
 * at least two decimals ("0.35" → "$0.35", "0.012345" → "$0.012", "0.000114" → "$0.00011").
 * Half up. Tables and detail pages show the exact amount ({@link usd}).
 */
export function usdRounded(value: string | null | undefined): string {
  if (value === null || value === undefined || value === '') return '—';
  const m = /^(-?)(\d*)(?:\.(\d*))?$/.exec(value.trim());
  if (!m) return `$${value}`;
  const [, sign, whole = '', frac = ''] = m;
  const intPart = whole.replace(/^0+/, '');
  const firstSignificant = frac.search(/[1-9]/);
  const decimals = intPart !== '' || firstSignificant === -1 ? 2 : Math.max(2, firstSignificant + 2);
  // The digits up to `decimals` plus one more, as an integer; then half up on that last digit.
  const scaled = BigInt((intPart || '0') + frac.padEnd(decimals + 1, '0').slice(0, decimals + 1));
  const rounded = ((scaled + 5n) / 10n).toString().padStart(decimals + 1, '0');
  const w = rounded.slice(0, -decimals);
  const f = rounded.slice(-decimals).replace(/0+$/, '').padEnd(2, '0');
  const zero = /^0*$/.test(w + f);
  return `${zero ? '' : sign}$${groupThousands(w)}.${f}`;
}

/** Move the decimal point of an exact decimal string `places` to the right (price per token → per 1M tokens). */
export function shiftDecimal(value: string, places: number): string {
  const m = /^(\d*)(?:\.(\d*))?$/.exec(value.trim());
  if (!m) return value;
  const whole = m[1] ?? '';
  const frac = (m[2] ?? '').padEnd(places, '0');
  const digits = (whole + frac.slice(0, places)).replace(/^0+(?=\d)/, '') || '0';
  const rest = frac.slice(places);
  return rest ? `${digits}.${rest}` : digits;
}

/** Price per token (USD string) as "$1.25 / 1M". */
export function perMillion(perToken: string | undefined): string {
  if (perToken === undefined) return '—';
  return usd(shiftDecimal(perToken, 6));
}

/** Chart ticks: a plain number of dollars. */
export function usdNumber(n: number): string {
  if (n === 0) return '$0';
  if (Math.abs(n) < 0.01) return `$${n.toPrecision(2)}`;
  return `$${n.toLocaleString('en-US', { maximumFractionDigits: 2 })}`;
}

export function int(n: number | null | undefined): string {
  return n === null || n === undefined ? '—' : intFormat.format(n);
}

/** Milliseconds: "850 ms", "1.25 s". */
export function ms(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  if (n < 1000) return `${Math.round(n)} ms`;
  return `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} s`;
}

/** A 0..1 share as a percentage. */
export function pct(x: number | null | undefined, digits = 1): string {
  if (x === null || x === undefined || Number.isNaN(x)) return '—';
  return `${(x * 100).toFixed(digits)}%`;
}

const dateTimeFormat = new Intl.DateTimeFormat('en-GB', { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
const hourFormat = new Intl.DateTimeFormat('en-GB', { month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit' });
// Day buckets are UTC days.
const dayFormat = new Intl.DateTimeFormat('en-GB', { weekday: 'short', month: 'short', day: '2-digit', timeZone: 'UTC' });

/** An ISO time in the browser's time zone: "29 Nov 2026, 14:03:12". */
export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dateTimeFormat.format(d);
}

const dateOnlyFormat = new Intl.DateTimeFormat('en-GB', { year: 'numeric', month: 'short', day: '2-digit' });
const clockFormat = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' });

/** The date of an ISO time in the browser's time zone: "29 Nov 2026". */
export function dateOnly(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dateOnlyFormat.format(d);
}

/** The clock time of an ISO time in the browser's time zone: "14:03:12". */
export function clockTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : clockFormat.format(d);
}

/** A chart bucket label. */
export function bucketLabel(ms: number, bucket: 'minute' | 'hour' | 'day'): string {
  return (bucket === 'day' ? dayFormat : hourFormat).format(new Date(ms));
}

const pad = (n: number) => String(n).padStart(2, '0');

/** Unix ms → the value of an `<input type="datetime-local">` (local time, minutes). */
export function toLocalInput(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The value of an `<input type="datetime-local">` → unix ms (NaN when empty or invalid). */
export function fromLocalInput(value: string): number {
  return value ? new Date(value).getTime() : NaN;
}

/** Shorten an id for a table cell; the full id stays in the title and the link. */
export function shortId(id: string, keep = 14): string {
  return id.length <= keep + 1 ? id : `${id.slice(0, keep)}…`;
}
