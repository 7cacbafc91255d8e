import { z } from 'zod';

/**
 * Compiled validators for the request schemas (issue #12): a zod v3 schema turned, once, into
 * a validator that accepts exactly what the schema accepts and returns exactly what its
 * `safeParse` returns as `data` (same keys in the same order, same values, transforms and
 * refinements run), or {@link INVALID}. Objects become generated code (see
 * {@link generateObjectParser}) with the checks of plain leaf fields inlined; the other nodes
 * are closures. No parse contexts and no issues are built: a passthrough object with ~60
 * optional fields costs one walk over the keys it has (zod parses every key of its shape,
 * present or not), and a refused value costs nothing more than the first failed check. The
 * request parsers run the compiled validator first and only call zod's `safeParse` when it
 * answers {@link INVALID}, so every error (its `code`, `param` and message) still comes from
 * zod. `test/ingress/fast-validate.test.ts` checks both against each other.
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

/**
 * A leaf validator whose output is its input (strings, numbers, booleans, literals, enums,
 * optional and nullable ones): its test as a JS expression over the variable named `x`, for
 * generated object code to inline instead of calling the validator.
 */
type InlineTest = (x: string) => string;

/** A literal as JS source, when it has one that compares the same with `===`. */
function literalSource(value: unknown): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

class Compiler {
  private readonly done = new Map<z.ZodTypeAny, FastParser>();
  private readonly inline = new WeakMap<FastParser, InlineTest>();

  /** `parser` with an inline test. */
  private leaf(parser: FastParser, test: InlineTest | undefined): FastParser {
    if (test) this.inline.set(parser, test);
    return parser;
  }

  constructor(private readonly overrides?: FastOverrides) {}

  compile(schema: z.ZodTypeAny): FastParser {
    const cached = this.done.get(schema);
    if (cached) return cached;
    // A forwarding stub first, so a cycle (not expected without z.lazy) cannot recurse forever.
    const stub = { target: undefined as FastParser | undefined };
    this.done.set(schema, (v) => stub.target!(v));
    const target = this.overrides?.get(schema) ?? this.build(schema);
    stub.target = target;
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
        return def.coerce ? viaZod(schema) : this.leaf((v) => (typeof v === 'boolean' ? v : INVALID), (x) => `typeof ${x} === "boolean"`);
      case K.ZodNull:
        return this.leaf((v) => (v === null ? null : INVALID), (x) => `${x} === null`);
      case K.ZodUndefined:
        return (v) => (v === undefined ? undefined : INVALID);
      case K.ZodUnknown:
      case K.ZodAny:
        return this.leaf((v) => v, () => 'true');
      case K.ZodLiteral: {
        const value = (schema as z.ZodLiteral<unknown>)._def.value;
        const src = literalSource(value);
        return this.leaf((v) => (v === value ? v : INVALID), src === undefined ? undefined : (x) => `${x} === ${src}`);
      }
      case K.ZodEnum: {
        const list = (schema as z.ZodEnum<[string, ...string[]]>)._def.values;
        const values = new Set<unknown>(list);
        return this.leaf((v) => (typeof v === 'string' && values.has(v) ? v : INVALID), list.length <= 12 ? (x) => `(${list.map((e) => `${x} === ${JSON.stringify(e)}`).join(' || ')})` : undefined);
      }
      case K.ZodOptional: {
        const inner = this.compile((schema as z.ZodOptional<z.ZodTypeAny>)._def.innerType);
        const test = this.inline.get(inner);
        return this.leaf((v) => (v === undefined ? undefined : inner(v)), test && ((x) => `(${x} === undefined || ${test(x)})`));
      }
      case K.ZodNullable: {
        const inner = this.compile((schema as z.ZodNullable<z.ZodTypeAny>)._def.innerType);
        const test = this.inline.get(inner);
        return this.leaf((v) => (v === null ? null : inner(v)), test && ((x) => `(${x} === null || ${test(x)})`));
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
      if (min === 0 && max === Infinity) return this.leaf((v) => (typeof v === 'string' ? v : INVALID), (x) => `typeof ${x} === "string"`);
      const bounds = (x: string) => (min > 0 ? ` && ${x}.length >= ${min}` : '') + (max < Infinity ? ` && ${x}.length <= ${max}` : '');
      return this.leaf((v) => (typeof v === 'string' && v.length >= min && v.length <= max ? v : INVALID), (x) => `(typeof ${x} === "string"${bounds(x)})`);
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
    const sources: Array<(x: string) => string> = [];
    let inlinable = true;
    for (const check of d.checks) {
      if (check.kind === 'int') int = true;
      else if (check.kind === 'min' || check.kind === 'max') {
        const bound = check.value;
        const op = check.kind === 'min' ? (check.inclusive ? '>=' : '>') : check.inclusive ? '<=' : '<';
        tests.push(op === '>=' ? (n) => n >= bound : op === '>' ? (n) => n > bound : op === '<=' ? (n) => n <= bound : (n) => n < bound);
        if (Number.isFinite(bound)) sources.push((x) => ` && ${x} ${op} ${String(bound)}`);
        else inlinable = false;
      } else return viaZod(schema);
    }
    // zod refuses NaN as "not a number" before any check.
    const parser: FastParser = (v) => {
      if (typeof v !== 'number' || Number.isNaN(v)) return INVALID;
      if (int && !Number.isInteger(v)) return INVALID;
      for (const t of tests) if (!t(v)) return INVALID;
      return v;
    };
    const test: InlineTest = (x) => `(typeof ${x} === "number" && !Number.isNaN(${x})${int ? ` && Number.isInteger(${x})` : ''}${sources.map((s) => s(x)).join('')})`;
    return this.leaf(parser, inlinable ? test : undefined);
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
    return generateObjectParser(keys, parsers, parsers.map((p) => this.inline.get(p)), mode, slow);
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
    if (effect.type === 'refinement' || effect.type === 'transform') {
      // A refinement keeps the value, a transform replaces it; both report through the context.
      const apply = effect.type === 'refinement'
        ? (r: unknown, ctx: IssueFlag) => {
          (effect.refinement as (value: unknown, ctx: IssueFlag) => unknown)(r, ctx);
          return r;
        }
        : (effect.transform as (value: unknown, ctx: IssueFlag) => unknown);
      // One context per effect, reused: effects run synchronously and do not re-enter.
      const flag = new IssueFlag();
      return (v) => {
        const r = inner(v);
        if (r === INVALID) return INVALID;
        flag.failed = false;
        const out = apply(r, flag);
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
function generateObjectParser(keys: string[], parsers: FastParser[], inline: Array<InlineTest | undefined>, mode: 'strip' | 'passthrough' | 'strict', slow: FastParser): FastParser {
  const kinds = parsers.map(absentKind);
  const lit = (k: string) => JSON.stringify(k);
  const lines: string[] = [
    'if (typeof v !== "object" || v === null) return INVALID;',
    // Arrays, Maps, class instances, null-prototype and promise-like objects: zod decides.
    'if (Object.getPrototypeOf(v) !== ObjectPrototype || typeof v.then === "function") return isZodObjectType(v) ? slow(v) : INVALID;',
    'const out = {};',
    'let x, r;',
  ];
  const take = (i: number, value: string) => {
    const test = inline[i];
    if (test) return `x = ${value}; if (!(${test("x")})) return INVALID; out[${lit(keys[i]!)}] = x;`;
    return `r = p${i}(${value}); if (r === INVALID) return INVALID; out[${lit(keys[i]!)}] = r;`;
  };
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
  // Generated from the schema's own key names (each a JSON string literal) and bounds; no input reaches the source.
  const make = new Function('INVALID', 'slow', 'isZodObjectType', 'ObjectPrototype', ...names, `return function parseObject(v) {\n${lines.join('\n')}\n};`) as (...args: unknown[]) => FastParser;
  return make(INVALID, slow, isZodObjectType, Object.prototype, ...parsers);
}
