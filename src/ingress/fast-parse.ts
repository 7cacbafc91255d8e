import { z } from 'zod';

/**
 * Compiled validators for the request schemas (issue #12): a zod v3 schema turned, once, into
 * plain closures that accept exactly what the schema accepts and return exactly what its
 * `safeParse` returns as `data` (same keys in the same order, same values, transforms and
 * refinements run), or {@link INVALID}. They build no parse contexts and no issues: an object
 * costs one walk over the keys it has (zod visits every key of its shape), and a refused value
 * costs nothing more than the first failed check. The request parsers run the compiled
 * validator first and only call zod's `safeParse` when it answers {@link INVALID}, so every
 * error (its `code`, `param` and message) still comes from zod.
 *
 * Exactness, node by node (zod 3.25, `zod/v3/types.js`): strings (`min`, `max`, `length`,
 * `regex` checks), numbers (`int`, `min`, `max`, inclusive or not; NaN is not a number),
 * booleans, `null`, `undefined`, literals, enums, `unknown`/`any`, optional, nullable,
 * default, arrays (`min`, `max`, `length`), objects (strip, passthrough or strict; shape keys
 * first in shape order, then extra keys in input order; `__proto__` never copied), records,
 * unions (first valid option), discriminated unions, and refinements and transforms (the
 * schema's own functions are called). Every other node type and check kind is delegated to
 * zod's `safeParse` for that node, which is exact by definition.
 *
 * The input is assumed to be JSON data (what `JSON.parse` returns): objects whose properties
 * are own, enumerable data properties. Objects whose prototype is not `Object.prototype` are
 * handed to zod; a non-enumerable property (which JSON cannot produce) would be missed.
 */

/** What a compiled validator returns for a value its schema refuses. */
export const INVALID: unique symbol = Symbol('invalid');

/** A compiled validator: the parsed value, or {@link INVALID}. */
export type FastParser = (value: unknown) => unknown;

/** Hand-made validators to use for given schema nodes (each must be exact, as the compiled ones are). */
export type FastOverrides = ReadonlyMap<z.ZodTypeAny, FastParser>;

const K = z.ZodFirstPartyTypeKind;

/**
 * Compile `schema` into a {@link FastParser}. Compiling is done once per schema (at module
 * load); shared sub-schemas are compiled once.
 * @param overrides validators to use instead of compiling the given nodes (for refinements
 *   that call zod themselves).
 */
export function compileFastParser(schema: z.ZodTypeAny, overrides?: FastOverrides): FastParser {
  return new Compiler(overrides).compile(schema);
}

/** zod's own parse of one node: exact, slow. */
function viaZod(schema: z.ZodTypeAny): FastParser {
  return (v) => {
    const r = schema.safeParse(v);
    return r.success ? r.data : INVALID;
  };
}

/** zod's `getParsedType(v) === 'object'`. */
function isZodObjectType(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as { then?: unknown; catch?: unknown };
  if (o.then && typeof o.then === 'function' && o.catch && typeof o.catch === 'function') return false;
  return !(v instanceof Map || v instanceof Set || v instanceof Date);
}

/** A JSON object: walked here; any other object goes to zod. */
function isPlainObject(v: object): v is Record<string, unknown> {
  return Object.getPrototypeOf(v) === Object.prototype && typeof (v as { then?: unknown }).then !== 'function';
}

/** A refinement or transform context that only notes whether an issue was added. */
class IssueFlag {
  failed = false;
  readonly path: (string | number)[] = [];
  addIssue = (): void => {
    this.failed = true;
  };
}

class Compiler {
  private readonly done = new Map<z.ZodTypeAny, FastParser>();

  constructor(private readonly overrides?: FastOverrides) {}

  compile(schema: z.ZodTypeAny): FastParser {
    const cached = this.done.get(schema);
    if (cached) return cached;
    // A forwarding stub first, so a cycle (not expected without z.lazy) cannot recurse forever.
    let target: FastParser | undefined;
    this.done.set(schema, (v) => target!(v));
    target = this.overrides?.get(schema) ?? this.build(schema);
    this.done.set(schema, target);
    return target;
  }

  private build(schema: z.ZodTypeAny): FastParser {
    const def = schema._def as { typeName: z.ZodFirstPartyTypeKind } & Record<string, unknown>;
    switch (def.typeName) {
      case K.ZodString:
        return this.string(schema as z.ZodString);
      case K.ZodNumber:
        return this.number(schema as z.ZodNumber);
      case K.ZodBoolean:
        return def.coerce ? viaZod(schema) : (v) => (typeof v === 'boolean' ? v : INVALID);
      case K.ZodNull:
        return (v) => (v === null ? null : INVALID);
      case K.ZodUndefined:
        return (v) => (v === undefined ? undefined : INVALID);
      case K.ZodUnknown:
      case K.ZodAny:
        return (v) => v;
      case K.ZodLiteral: {
        const value = (schema as z.ZodLiteral<unknown>)._def.value;
        return (v) => (v === value ? v : INVALID);
      }
      case K.ZodEnum: {
        const values = new Set<unknown>((schema as z.ZodEnum<[string, ...string[]]>)._def.values);
        return (v) => (typeof v === 'string' && values.has(v) ? v : INVALID);
      }
      case K.ZodOptional: {
        const inner = this.compile((schema as z.ZodOptional<z.ZodTypeAny>)._def.innerType);
        return (v) => (v === undefined ? undefined : inner(v));
      }
      case K.ZodNullable: {
        const inner = this.compile((schema as z.ZodNullable<z.ZodTypeAny>)._def.innerType);
        return (v) => (v === null ? null : inner(v));
      }
      case K.ZodDefault: {
        const d = (schema as z.ZodDefault<z.ZodTypeAny>)._def;
        const inner = this.compile(d.innerType);
        return (v) => inner(v === undefined ? d.defaultValue() : v);
      }
      case K.ZodArray:
        return this.array(schema as z.ZodArray<z.ZodTypeAny>);
      case K.ZodObject:
        return this.object(schema as z.AnyZodObject);
      case K.ZodRecord:
        return this.record(schema as z.ZodRecord);
      case K.ZodUnion: {
        const options = (schema as z.ZodUnion<[z.ZodTypeAny, ...z.ZodTypeAny[]]>)._def.options.map((o) => this.compile(o));
        return (v) => {
          for (const option of options) {
            const r = option(v);
            if (r !== INVALID) return r;
          }
          return INVALID;
        };
      }
      case K.ZodDiscriminatedUnion: {
        const d = (schema as z.ZodDiscriminatedUnion<string, z.AnyZodObject[]>)._def;
        const options = new Map<unknown, FastParser>();
        for (const [value, option] of d.optionsMap) options.set(value, this.compile(option));
        const key = d.discriminator;
        return (v) => {
          if (!isZodObjectType(v)) return INVALID;
          const option = options.get(v[key]);
          return option ? option(v) : INVALID;
        };
      }
      case K.ZodEffects:
        return this.effects(schema as z.ZodEffects<z.ZodTypeAny>);
      default:
        return viaZod(schema);
    }
  }

  private string(schema: z.ZodString): FastParser {
    const d = schema._def;
    if (d.coerce) return viaZod(schema);
    let min = 0;
    let max = Infinity;
    const regexes: RegExp[] = [];
    for (const check of d.checks) {
      if (check.kind === 'min') min = Math.max(min, check.value);
      else if (check.kind === 'max') max = Math.min(max, check.value);
      else if (check.kind === 'length') {
        min = Math.max(min, check.value);
        max = Math.min(max, check.value);
      } else if (check.kind === 'regex') regexes.push(check.regex);
      else return viaZod(schema);
    }
    if (regexes.length === 0) {
      if (min === 0 && max === Infinity) return (v) => (typeof v === 'string' ? v : INVALID);
      return (v) => (typeof v === 'string' && v.length >= min && v.length <= max ? v : INVALID);
    }
    return (v) => {
      if (typeof v !== 'string' || v.length < min || v.length > max) return INVALID;
      for (const re of regexes) {
        re.lastIndex = 0;
        if (!re.test(v)) return INVALID;
      }
      return v;
    };
  }

  private number(schema: z.ZodNumber): FastParser {
    const d = schema._def;
    if (d.coerce) return viaZod(schema);
    let int = false;
    const tests: Array<(n: number) => boolean> = [];
    for (const check of d.checks) {
      if (check.kind === 'int') int = true;
      else if (check.kind === 'min') {
        const bound = check.value;
        tests.push(check.inclusive ? (n) => n >= bound : (n) => n > bound);
      } else if (check.kind === 'max') {
        const bound = check.value;
        tests.push(check.inclusive ? (n) => n <= bound : (n) => n < bound);
      } else return viaZod(schema);
    }
    // `n >= bound` is false for NaN, as zod's `n < bound` test would be; NaN is refused first anyway.
    return (v) => {
      if (typeof v !== 'number' || Number.isNaN(v)) return INVALID;
      if (int && !Number.isInteger(v)) return INVALID;
      for (const t of tests) if (!t(v)) return INVALID;
      return v;
    };
  }

  private array(schema: z.ZodArray<z.ZodTypeAny>): FastParser {
    const d = schema._def;
    const element = this.compile(d.type);
    let min = d.minLength?.value ?? 0;
    let max = d.maxLength?.value ?? Infinity;
    if (d.exactLength) {
      min = Math.max(min, d.exactLength.value);
      max = Math.min(max, d.exactLength.value);
    }
    return (v) => {
      if (!Array.isArray(v) || v.length < min || v.length > max) return INVALID;
      const out: unknown[] = [];
      for (let i = 0; i < v.length; i++) {
        const r = element(v[i]);
        if (r === INVALID) return INVALID;
        out.push(r);
      }
      return out;
    };
  }

  private object(schema: z.AnyZodObject): FastParser {
    const d = schema._def;
    const slow = viaZod(schema);
    const shape = schema.shape as z.ZodRawShape;
    const keys = Object.keys(shape);
    // zod reads shape keys with `data[key]`, which would find Object.prototype's members.
    if (!(d.catchall instanceof z.ZodNever) || keys.some((k) => k in Object.prototype)) return slow;
    const mode = d.unknownKeys as 'strip' | 'passthrough' | 'strict';
    const parsers = keys.map((k) => this.compile(shape[k]!));
    return generateObjectParser(keys, parsers, mode, slow);
  }

  private record(schema: z.ZodRecord): FastParser {
    const d = schema._def;
    const slow = viaZod(schema);
    const keyType = d.keyType as z.ZodTypeAny;
    const plainKeys = keyType instanceof z.ZodString && keyType._def.checks.length === 0 && !keyType._def.coerce;
    const keyParser = this.compile(keyType);
    const value = this.compile(d.valueType);
    return (v) => {
      if (!isZodObjectType(v)) return INVALID;
      if (!isPlainObject(v)) return slow(v);
      const out: Record<string, unknown> = {};
      for (const key in v) {
        const k = plainKeys ? key : keyParser(key);
        if (k === INVALID) return INVALID;
        const r = value(v[key]);
        if (r === INVALID) return INVALID;
        if (k !== '__proto__') out[k as string] = r;
      }
      return out;
    };
  }

  private effects(schema: z.ZodEffects<z.ZodTypeAny>): FastParser {
    const d = schema._def;
    const inner = this.compile(d.schema);
    const effect = d.effect;
    if (effect.type === 'refinement') {
      const refinement = effect.refinement as (value: unknown, ctx: IssueFlag) => unknown;
      return (v) => {
        const r = inner(v);
        if (r === INVALID) return INVALID;
        const flag = new IssueFlag();
        refinement(r, flag);
        return flag.failed ? INVALID : r;
      };
    }
    if (effect.type === 'transform') {
      const transform = effect.transform as (value: unknown, ctx: IssueFlag) => unknown;
      return (v) => {
        const r = inner(v);
        if (r === INVALID) return INVALID;
        const flag = new IssueFlag();
        const out = transform(r, flag);
        return flag.failed ? INVALID : out;
      };
    }
    return viaZod(schema);
  }
}

/**
 * What a key's validator makes of `undefined` (an absent key): refused, left out, or a value
 * (a default, computed at every parse).
 */
function absentKind(parser: FastParser): 'required' | 'skip' | 'compute' {
  let r: unknown;
  try {
    r = parser(undefined);
  } catch {
    return 'compute';
  }
  return r === INVALID ? 'required' : r === undefined ? 'skip' : 'compute';
}

/**
 * The validator of one object schema as generated code (`new Function`, from the schema's own
 * key names only): named property reads and writes, which V8 makes far cheaper than the keyed
 * ones a generic loop needs. A strip-mode object reads its shape keys directly, as zod does; a
 * passthrough or strict one walks the keys the input has once (zod walks them too, to find the
 * extra keys) and then writes the output in shape order, then the extra keys.
 */
function generateObjectParser(keys: string[], parsers: FastParser[], mode: 'strip' | 'passthrough' | 'strict', slow: FastParser): FastParser {
  const kinds = parsers.map(absentKind);
  const lit = (k: string) => JSON.stringify(k);
  const lines: string[] = [
    'if (!isZodObjectType(v)) return INVALID;',
    'if (!isPlainObject(v)) return slow(v);',
    'const out = {};',
    'let x, r;',
  ];
  const take = (i: number, value: string) =>
    `r = p${i}(${value}); if (r === INVALID) return INVALID; out[${lit(keys[i]!)}] = r;`;
  if (mode === 'strip' && keys.length <= 16) {
    keys.forEach((k, i) => {
      const absent =
        kinds[i] === 'required'
          ? 'return INVALID;'
          : kinds[i] === 'skip'
            ? `if (${lit(k)} in v) out[${lit(k)}] = undefined;`
            : `r = p${i}(undefined); if (r === INVALID) return INVALID; if (r !== undefined || ${lit(k)} in v) out[${lit(k)}] = r;`;
      lines.push(`x = v[${lit(k)}];`, `if (x !== undefined) { ${take(i, 'x')} } else { ${absent} }`);
    });
  } else {
    lines.splice(2, 0, ...keys.map((_, i) => `let h${i} = false;`), 'let extra;');
    const other = mode === 'strict' ? 'return INVALID;' : mode === 'passthrough' ? '(extra ??= []).push(k);' : '';
    lines.push(
      'for (const k in v) {',
      '  switch (k) {',
      ...keys.map((k, i) => `    case ${lit(k)}: h${i} = true; break;`),
      `    default: ${other}`,
      '  }',
      '}',
    );
    keys.forEach((k, i) => {
      const absent =
        kinds[i] === 'required'
          ? 'return INVALID;'
          : kinds[i] === 'skip'
            ? ''
            : `r = p${i}(undefined); if (r === INVALID) return INVALID; if (r !== undefined) out[${lit(k)}] = r;`;
      lines.push(`if (h${i}) { ${take(i, `v[${lit(k)}]`)} } else { ${absent} }`);
    });
    if (mode === 'passthrough') {
      lines.push('if (extra !== undefined) for (const k of extra) if (k !== "__proto__") { x = v[k]; if (x !== undefined) out[k] = x; }');
    }
  }
  lines.push('return out;');
  const names = parsers.map((_, i) => `p${i}`);
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from the schema's key names, each a JSON string literal
  const make = new Function('INVALID', 'slow', 'isZodObjectType', 'isPlainObject', ...names, `return function parseObject(v) {\n${lines.join('\n')}\n};`) as (...args: unknown[]) => FastParser;
  return make(INVALID, slow, isZodObjectType, isPlainObject, ...parsers);
}
