import { isIPv4, isIPv6 } from 'node:net';

/** IPv4 ranges that are not public unicast: `[network address, prefix length, name]`. */
const V4_BLOCKED: ReadonlyArray<readonly [string, number, string]> = [
  ['0.0.0.0', 8, 'this network'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

function v4ToNumber(address: string): number {
  return address.split('.').reduce((acc, octet) => acc * 256 + Number(octet), 0);
}

function v4Class(value: number): string | null {
  for (const [base, prefix, name] of V4_BLOCKED) {
    const size = 2 ** (32 - prefix);
    const start = v4ToNumber(base);
    if (value >= start && value < start + size) return name;
  }
  return null;
}

/** Parse an IPv6 address (zone id, `::` and a trailing dotted quad allowed) into 8 hextets. */
export function parseIPv6(address: string): number[] | null {
  let text = address.replace(/%.*$/, '');
  if (!isIPv6(text)) return null;
  const tail: number[] = [];
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const v = v4ToNumber(quad[1]!);
    tail.push(Math.floor(v / 65536), v % 65536);
    text = text.slice(0, -quad[1]!.length);
    if (!text.endsWith('::')) text = text.replace(/:$/, '');
  }
  const [head, rest] = text.includes('::') ? text.split('::') as [string, string] : [text, undefined];
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((h) => parseInt(h, 16)));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  const fill = 8 - tail.length - left.length - right.length;
  if (rest === undefined && fill !== 0) return null;
  if (fill < 0) return null;
  return [...left, ...new Array<number>(fill).fill(0), ...right, ...tail];
}

function v6Class(h: number[]): string | null {
  const [a = 0, b = 0] = h;
  const embeddedV4 = (hi: number, lo: number) => v4Class(hi * 65536 + lo);
  if (h.every((x) => x === 0)) return 'unspecified';
  if (h.slice(0, 7).every((x) => x === 0) && h[7] === 1) return 'loopback';
  // IPv4-mapped ::ffff:0:0/96 (::ffff:a.b.c.d) and IPv4-compatible ::a.b.c.d: judge the IPv4 address.
  if (h.slice(0, 5).every((x) => x === 0) && (h[5] === 0xffff || h[5] === 0)) return embeddedV4(h[6]!, h[7]!) ?? null;
  // IPv4-translated ::ffff:0:a.b.c.d (::ffff:0:0:0/96, RFC 2765): the same IPv4 address one hextet earlier.
  if (h.slice(0, 4).every((x) => x === 0) && h[4] === 0xffff && h[5] === 0) return embeddedV4(h[6]!, h[7]!) ?? null;
  // NAT64 64:ff9b::/96 and 6to4 2002::/16 embed an IPv4 address too.
  if (a === 0x64 && b === 0xff9b && h.slice(2, 6).every((x) => x === 0)) return embeddedV4(h[6]!, h[7]!);
  // Local-use NAT64 64:ff9b:1::/48 (RFC 8215) translates to whatever the local network chose: never public.
  if (a === 0x64 && b === 0xff9b && h[2] === 1) return 'local-use NAT64';
  // Any other address in 64:ff9b::/32 is unassigned.
  if (a === 0x64 && b === 0xff9b) return 'reserved';
  if (a === 0x2002) return embeddedV4(h[1]!, h[2]!);
  // Teredo 2001::/32 tunnels to an IPv4 server and client (obfuscated) the policy cannot vouch for.
  if (a === 0x2001 && b === 0) return 'Teredo';
  if (a === 0x100 && b === 0 && h[2] === 0 && h[3] === 0) return 'discard';
  if (a === 0x2001 && b === 0xdb8) return 'documentation';
  if ((a & 0xfe00) === 0xfc00) return 'unique local (private)';
  if ((a & 0xffc0) === 0xfe80) return 'link-local';
  if ((a & 0xffc0) === 0xfec0) return 'site-local';
  if ((a & 0xff00) === 0xff00) return 'multicast';
  return null;
}

/**
 * Why an IP address must not be fetched from (loopback, private, link-local, carrier-grade
 * NAT, multicast, documentation, reserved, unspecified; IPv4 and IPv6, including IPv4
 * addresses embedded in IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64 and 6to4 IPv6
 * addresses; local-use NAT64 `64:ff9b:1::/48` and Teredo `2001::/32` as a whole), or null
 * for a public unicast address. A string that is not an IP address is refused too.
 * @see https://www.iana.org/assignments/iana-ipv4-special-registry/
 * @see https://www.iana.org/assignments/iana-ipv6-special-registry/
 */
export function nonPublicReason(address: string): string | null {
  if (isIPv4(address)) return v4Class(v4ToNumber(address));
  const hextets = parseIPv6(address);
  if (!hextets) return 'not an IP address';
  return v6Class(hextets);
}
