// Lossless JSON for fencing tokens.
//
// JSON.parse turns every number into a float64, which cannot tell 2^53 from
// 2^53+1: a token read that way is silently rounded, and a guard handed the
// rounded token either refuses an honest holder or, worse, accepts a stale
// one. parse reads integers of token fields as bigint straight from their
// digits, and any other integer too big for a float64 to hold exactly as
// bigint as well, so no number is ever rounded. stringify writes bigint
// back as its digits.
/**
 * The fields fenceview's answers carry tokens in. Their integers are always
 * bigint, whatever their size, so a token has one type in every answer.
 */
export const TOKEN_FIELDS = new Set([
    'token', 'presented', 'required', 'highWaterMark', 'lastToken', 'nextToken', 'floor', 'seq', 'term',
]);
/** The deepest nesting parse accepts; deeper input is an error, not a stack overflow. */
export const MAX_DEPTH = 64;
export class JSONSyntaxError extends SyntaxError {
    position;
    constructor(message, position) {
        super(`${message} at offset ${position}`);
        this.position = position;
        this.name = 'JSONSyntaxError';
    }
}
/**
 * parse reads one JSON text strictly (RFC 8259: no trailing commas, no
 * comments, nothing after the value). Integers of the fields named in
 * bigintKeys (TOKEN_FIELDS by default) are bigint; other integers are
 * numbers when a float64 holds them exactly, else bigint; numbers with a
 * fraction or an exponent are numbers.
 */
export function parse(text, bigintKeys = TOKEN_FIELDS) {
    // Fast path: without a run of 16 digits anywhere, every number in the
    // text is below 2^53, so the native parser reads each exactly and only
    // the token fields need turning into bigint. A run of digits inside a
    // string only sends the text down the slow path.
    if (!longDigits.test(text)) {
        let v;
        try {
            v = JSON.parse(text);
        }
        catch {
            v = undefined; // the strict parser below says where and why
        }
        if (v !== undefined)
            return bigintFields(v, bigintKeys, 0);
    }
    const p = new Parser(text, bigintKeys);
    p.space();
    const v = p.value(0, null);
    p.space();
    if (p.i !== text.length)
        p.fail('unexpected text after the JSON value');
    return v;
}
const longDigits = /[0-9]{16}/;
function bigintFields(v, keys, depth) {
    if (typeof v !== 'object' || v === null)
        return v;
    if (depth > MAX_DEPTH)
        throw new JSONSyntaxError(`nesting deeper than ${MAX_DEPTH}`, 0);
    if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++)
            v[i] = bigintFields(v[i], keys, depth + 1);
        return v;
    }
    const o = v;
    for (const k of Object.keys(o)) {
        const x = o[k];
        if (typeof x === 'number') {
            if (keys.has(k) && Number.isSafeInteger(x))
                o[k] = BigInt(x);
        }
        else if (typeof x === 'object' && x !== null) {
            o[k] = bigintFields(x, keys, depth + 1);
        }
    }
    return o;
}
class Parser {
    s;
    keys;
    i = 0;
    constructor(s, keys) {
        this.s = s;
        this.keys = keys;
    }
    fail(msg) {
        throw new JSONSyntaxError(msg, this.i);
    }
    space() {
        const s = this.s;
        while (this.i < s.length) {
            const c = s.charCodeAt(this.i);
            if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09)
                this.i++;
            else
                break;
        }
    }
    value(depth, key) {
        if (depth > MAX_DEPTH)
            this.fail(`nesting deeper than ${MAX_DEPTH}`);
        const c = this.s[this.i];
        switch (c) {
            case '{': return this.object(depth);
            case '[': return this.array(depth);
            case '"': return this.string();
            case 't': return this.word('true', true);
            case 'f': return this.word('false', false);
            case 'n': return this.word('null', null);
            default:
                if (c === '-' || (c !== undefined && c >= '0' && c <= '9'))
                    return this.number(key);
                return this.fail(c === undefined ? 'unexpected end of JSON' : `unexpected character ${JSON.stringify(c)}`);
        }
    }
    word(w, v) {
        if (!this.s.startsWith(w, this.i))
            this.fail('invalid literal');
        this.i += w.length;
        return v;
    }
    object(depth) {
        const out = {};
        this.i++; // {
        this.space();
        if (this.s[this.i] === '}') {
            this.i++;
            return out;
        }
        for (;;) {
            if (this.s[this.i] !== '"')
                this.fail('expected a string key');
            const k = this.string();
            this.space();
            if (this.s[this.i] !== ':')
                this.fail("expected ':'");
            this.i++;
            this.space();
            const v = this.value(depth + 1, k);
            // defineProperty: a key named __proto__ is data, never the prototype.
            Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
            this.space();
            const c = this.s[this.i++];
            if (c === '}')
                return out;
            if (c !== ',')
                this.fail("expected ',' or '}'");
            this.space();
        }
    }
    array(depth) {
        const out = [];
        this.i++; // [
        this.space();
        if (this.s[this.i] === ']') {
            this.i++;
            return out;
        }
        for (;;) {
            this.space();
            out.push(this.value(depth + 1, null));
            this.space();
            const c = this.s[this.i++];
            if (c === ']')
                return out;
            if (c !== ',')
                this.fail("expected ',' or ']'");
        }
    }
    string() {
        const s = this.s;
        const start = ++this.i; // past the quote
        // Fast path: no escapes.
        for (let j = start; j < s.length; j++) {
            const c = s.charCodeAt(j);
            if (c === 0x22) {
                this.i = j + 1;
                return s.slice(start, j);
            }
            if (c === 0x5c || c < 0x20)
                break;
        }
        let out = '';
        for (;;) {
            if (this.i >= s.length)
                this.fail('unterminated string');
            const c = s.charCodeAt(this.i);
            if (c === 0x22) {
                this.i++;
                return out;
            }
            if (c < 0x20)
                this.fail('control character in string');
            if (c !== 0x5c) {
                out += s[this.i++];
                continue;
            }
            const e = s[this.i + 1];
            this.i += 2;
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    const hex = s.slice(this.i, this.i + 4);
                    if (!/^[0-9a-fA-F]{4}$/.test(hex))
                        this.fail('invalid \\u escape');
                    out += String.fromCharCode(parseInt(hex, 16));
                    this.i += 4;
                    break;
                }
                default:
                    this.i -= 2;
                    this.fail('invalid escape');
            }
        }
    }
    number(key) {
        const m = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
        m.lastIndex = this.i;
        const r = m.exec(this.s);
        if (!r)
            return this.fail('invalid number');
        const text = r[0];
        this.i += text.length;
        const token = key !== null && this.keys.has(key);
        if (r[1] !== undefined || r[2] !== undefined) {
            // As the fast path reads it: a token field's integral value is a bigint.
            const n = Number(text);
            return token && Number.isSafeInteger(n) ? BigInt(n) : n;
        }
        if (token)
            return BigInt(text);
        const n = Number(text);
        return Number.isSafeInteger(n) ? n : BigInt(text);
    }
}
/**
 * stringify writes v as compact JSON, bigint as its decimal digits (where
 * JSON.stringify throws). Properties whose value is undefined are left out,
 * as JSON.stringify does.
 */
export function stringify(v) {
    switch (typeof v) {
        case 'bigint':
            return v.toString();
        case 'number':
            if (!Number.isFinite(v))
                throw new TypeError(`cannot write ${v} as JSON`);
            return String(v);
        case 'string':
            return JSON.stringify(v);
        case 'boolean':
            return v ? 'true' : 'false';
        case 'object': {
            if (v === null)
                return 'null';
            if (Array.isArray(v))
                return '[' + v.map((x) => (x === undefined ? 'null' : stringify(x))).join(',') + ']';
            if (v instanceof Date)
                return JSON.stringify(v.toISOString());
            const parts = [];
            for (const [k, x] of Object.entries(v)) {
                if (x === undefined || typeof x === 'function')
                    continue;
                parts.push(JSON.stringify(k) + ':' + stringify(x));
            }
            return '{' + parts.join(',') + '}';
        }
        default:
            throw new TypeError(`cannot write a ${typeof v} as JSON`);
    }
}
