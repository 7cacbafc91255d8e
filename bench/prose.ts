/** About `chars` characters of varied English prose (deterministic): the long prompts the benchmarks send. */
export function prose(chars: number): string {
  const words = ['the', 'gateway', 'routes', 'each', 'request', 'to', 'a', 'provider', 'and', 'records', 'its', 'usage', 'cost', 'latency', 'while', 'streaming', 'tokens', 'back', 'from', 'model', 'with', 'fallbacks', 'when', 'an', 'endpoint', 'fails'];
  let out = '';
  for (let i = 0; out.length < chars; i++) {
    out += words[(i * 7 + (i >> 3)) % words.length]!;
    out += i % 13 === 12 ? '. ' : ' ';
  }
  return out.slice(0, chars);
}
