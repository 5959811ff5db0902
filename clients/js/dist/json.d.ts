/** A value parse returns. */
export type JSONValue = null | boolean | number | bigint | string | JSONValue[] | {
    [key: string]: JSONValue;
};
/**
 * The fields fenceview's answers carry tokens in. Their integers are always
 * bigint, whatever their size, so a token has one type in every answer.
 */
export declare const TOKEN_FIELDS: ReadonlySet<string>;
/** The deepest nesting parse accepts; deeper input is an error, not a stack overflow. */
export declare const MAX_DEPTH = 64;
export declare class JSONSyntaxError extends SyntaxError {
    readonly position: number;
    constructor(message: string, position: number);
}
/**
 * parse reads one JSON text strictly (RFC 8259: no trailing commas, no
 * comments, nothing after the value). Integers of the fields named in
 * bigintKeys (TOKEN_FIELDS by default) are bigint; other integers are
 * numbers when a float64 holds them exactly, else bigint; numbers with a
 * fraction or an exponent are numbers.
 */
export declare function parse(text: string, bigintKeys?: ReadonlySet<string>): JSONValue;
/**
 * stringify writes v as compact JSON, bigint as its decimal digits (where
 * JSON.stringify throws). Properties whose value is undefined are left out,
 * as JSON.stringify does.
 */
export declare function stringify(v: unknown): string;
