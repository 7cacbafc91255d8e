/**
 * The integer and number rules the local engine puts into JSON schema grammars
 * (src/providers/local/json-schema-grammar.ts), checked without a model: each GBNF expression is
 * turned into a regular expression (the rules use only literals, character ranges, groups,
 * alternatives, `?` and `{m,n}`) and compared with the integers it must accept, one by one.
 * The engine test (test/providers/local-engine.test.ts) runs the grammars in llama.cpp.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { integerRangeGbnf, prepareJsonSchema, replaceNumberRules, SchemaBoundsError } from '../../src/providers/local/json-schema-grammar.js';

/** A regular expression for a GBNF expression made of literals, ranges, groups, `|`, `?` and `{m,n}`. */
function gbnfRegex(gbnf: string): RegExp {
  const source = gbnf
    .replace(/"((?:[^"\\]|\\.)*)"|\s+/g, (_m, literal: string | undefined) => (literal === undefined ? '' : `(?:${literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')})`))
    .replace(/\(/g, '(?:')
    .replace(/\(\?:\?:/g, '(?:');
  return new RegExp(`^(?:${source})$`);
}

describe('JSON schema grammar: integers', () => {
  const ranges: Array<[number, number]> = [[0, 0], [0, 9], [1, 100], [18, 120], [-9, 9], [-120, -18], [-1000, 37], [7, 7], [99, 1001], [-5, 0]];
  for (const [lo, hi] of ranges) {
    test(`[${lo}, ${hi}]: exactly the integers in range, in JSON form`, () => {
      const re = gbnfRegex(integerRangeGbnf(BigInt(lo), BigInt(hi)));
      for (let n = lo - 150; n <= hi + 150; n++) assert.equal(re.test(String(n)), n >= lo && n <= hi, `${n} in ${re}`);
      for (const bad of ['-0', '00', '01', `${lo}e0`, `${lo}.0`, '+1', '']) if (bad !== String(lo)) assert.equal(re.test(bad), false, bad);
    });
  }

  test('without bounds: the safe integers, no exponent, fraction or leading zero', () => {
    const re = gbnfRegex(integerRangeGbnf(-9_007_199_254_740_991n, 9_007_199_254_740_991n));
    for (const ok of ['0', '7', '-7', '293', '9007199254740991', '-9007199254740991', '9007199254740990', '1000000000000000']) assert.ok(re.test(ok), ok);
    for (const bad of ['293e0', '8E9', '2E-265995223919020', '9007199254740992', '-9007199254740992', '10000000000000000', '1.0', '-0', '007']) assert.equal(re.test(bad), false, bad);
  });

  test('a schema: integer and number placeholders, bounds read from minimum/maximum and the exclusive forms', () => {
    const { schema, numbers } = prepareJsonSchema({
      type: 'object',
      properties: {
        a: { type: 'integer', minimum: 1.5, maximum: 4 },
        b: { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 3 },
        c: { type: 'integer', minimum: 0, exclusiveMinimum: true, maximum: 2 },
        d: { type: ['integer', 'null'], maximum: -1, minimum: -3 },
        e: { type: 'integer', enum: [10, 20] },
        f: { type: 'array', items: { type: 'number' } },
        g: { type: 'number', minimum: 0, maximum: 1 },
      },
    }, 'n');
    const rule = (key: string) => gbnfRegex(numbers.get(key)!);
    const props = (schema as { properties: Record<string, unknown> }).properties;
    assert.deepEqual(props.a, { const: 'op-number-n-0' });
    assert.deepEqual(['1', '2', '3', '4', '5'].map((v) => rule('op-number-n-0').test(v)), [false, true, true, true, false]);
    assert.deepEqual(['0', '1', '2', '3'].map((v) => rule('op-number-n-1').test(v)), [false, true, true, false]);
    assert.deepEqual(['0', '1', '2', '3'].map((v) => rule('op-number-n-2').test(v)), [false, true, true, false]);
    assert.deepEqual(props.d, { oneOf: [{ const: 'op-number-n-3' }, { type: 'null', maximum: -1, minimum: -3 }] });
    assert.deepEqual(['-4', '-3', '-1', '0'].map((v) => rule('op-number-n-3').test(v)), [false, true, true, false]);
    assert.deepEqual(props.e, { type: 'integer', enum: [10, 20] }, 'literal values stay as they are');
    assert.deepEqual(props.f, { type: 'array', items: { const: 'op-number-n-4' } });
    const number = rule('op-number-n-4');
    for (const ok of ['0', '-1.5', '3e8', '2.5E-10', '123456']) assert.ok(number.test(ok), ok);
    for (const bad of ['1e999', '2E-265995223919020', '01', '.5', '1.', '+1']) assert.equal(number.test(bad), false, bad);
    const ratio = rule('op-number-n-5');
    for (const ok of ['0', '0.25', '1', '1.0', '0.999']) assert.ok(ratio.test(ok), ok);
    for (const bad of ['1.5', '2', '-0.1', '1e-1', '1.01']) assert.equal(ratio.test(bad), false, bad);
    assert.equal(numbers.size, 6);
  });

  test('bounds no integer meets are refused, with the path of the schema', () => {
    assert.throws(() => prepareJsonSchema({ type: 'object', properties: { n: { type: 'integer', minimum: 2.2, maximum: 2.8 } } }, 'x'), (err: unknown) => {
      assert.ok(err instanceof SchemaBoundsError);
      assert.equal(err.path, '.properties.n');
      return true;
    });
  });

  test('placeholders become the rules; node-llama-cpp number rules left over are made strict', () => {
    const numbers = new Map([['op-number-x-0', '"1" | "2"']]);
    const gbnf = 'root ::= "{" val0 "}"\nval0 ::= "\\"op-number-x-0\\""\ninteger-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?';
    const out = replaceNumberRules(gbnf, numbers);
    assert.match(out, /^val0 ::= \("1" \| "2"\)$/m);
    const integer = gbnfRegex(/^integer-number-rule ::= (.*)$/m.exec(out)![1]!);
    assert.equal(integer.test('293e0'), false);
    assert.equal(integer.test('293'), true);
  });
});
