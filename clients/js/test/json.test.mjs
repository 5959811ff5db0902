import test from 'node:test';
import assert from 'node:assert/strict';
import { parse, stringify, JSONSyntaxError, toToken, parseToken, InvalidInputError, MAX_TOKEN } from '../dist/index.js';

test('plain JSON.parse rounds a token above 2^53: the pitfall parse avoids', () => {
  const text = '{"fencing":{"token":9007199254740993}}';
  assert.equal(JSON.parse(text).fencing.token, 9007199254740992); // off by one, silently
  assert.equal(parse(text).fencing.token, 9007199254740993n);
});

test('token fields are bigint at every size; other integers only when a number cannot hold them', () => {
  const v = parse('{"token":7,"required":9223372036854775807,"presented":1,"holdCount":2,"big":9007199254740993,"f":1.5,"e":1e3,"neg":-4}');
  assert.deepEqual(v, { token: 7n, required: MAX_TOKEN, presented: 1n, holdCount: 2, big: 9007199254740993n, f: 1.5, e: 1000, neg: -4 });
});

test('stringify writes bigint digits exactly, and round-trips with parse', () => {
  const v = { token: 2n ** 63n - 2n, list: [1n, 'a', null, true], nested: { required: 9007199254740993n }, skip: undefined };
  const text = stringify(v);
  assert.equal(text, '{"token":9223372036854775806,"list":[1,"a",null,true],"nested":{"required":9007199254740993}}');
  assert.deepEqual(parse(text), { token: 2n ** 63n - 2n, list: [1, 'a', null, true], nested: { required: 9007199254740993n } });
});

test('strings with escapes and unicode survive', () => {
  const s = 'a"b\\c\n\u0001 заказ 🧾 \u2028';
  assert.equal(parse(stringify({ s })).s, s);
  assert.equal(parse('"\\u00e9\\ud83e\\uddfe"'), 'é🧾');
});

test('malformed JSON is refused, never guessed at', () => {
  for (const bad of ['', '{', '{"a":1,}', '[1,]', '01', '1.', '.5', '+1', 'NaN', '{"a" 1}', "{'a':1}", '"\u0001"', '"\\x"', '1 2', 'tru', '[' .repeat(100) + ']'.repeat(100)]) {
    assert.throws(() => parse(bad), JSONSyntaxError, bad);
  }
});

test('a key named __proto__ is data, not a prototype', () => {
  const v = parse('{"__proto__":{"polluted":true}}');
  assert.equal({}.polluted, undefined);
  assert.equal(Object.getPrototypeOf(v), Object.prototype);
  assert.deepEqual(Object.keys(v), ['__proto__']);
});

test('tokens from text and numbers: exact or refused', () => {
  assert.equal(parseToken('9223372036854775807'), MAX_TOKEN);
  for (const bad of ['0', '-1', '01', '1.0', ' 1', '9223372036854775808', '', '1e3', '0x10']) {
    assert.throws(() => parseToken(bad), InvalidInputError, bad);
  }
  assert.equal(toToken(42), 42n);
  assert.throws(() => toToken(2 ** 53 + 2), InvalidInputError); // a number that big is already rounded
  assert.throws(() => toToken(0n), InvalidInputError);
  assert.throws(() => toToken(MAX_TOKEN + 1n), InvalidInputError);
});

test('the native fast path and the digit-by-digit path read the same values', () => {
  const body = '"token":5,"required":1e1,"holdCount":3,"f":1.5,"e":2e3,"list":[{"presented":7}],"__proto__":{"x":1}';
  const fast = parse(`{"s":"short",${body}}`); // no run of 16 digits: JSON.parse
  const slow = parse(`{"s":"1234567890123456",${body}}`); // the same numbers, read by hand
  delete fast.s;
  delete slow.s;
  assert.deepEqual(fast, slow);
  assert.deepEqual(fast, parse(`{${body}}`));
  assert.equal(fast.token, 5n);
  assert.equal(fast.required, 10n);
  assert.equal(fast.list[0].presented, 7n);
  assert.equal(Object.getPrototypeOf(fast), Object.prototype);
});
