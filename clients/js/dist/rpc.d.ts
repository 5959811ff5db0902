import { type JSONValue } from './json.js';
export interface RpcAnswer {
    status: number;
    body: JSONValue;
}
/** One websocket to /v1/rpc. When it breaks, every waiting call fails with ConnectionError. */
export declare class RpcSession {
    #private;
    constructor(url: string, headers: Record<string, string>);
    /** Whether the stream ever opened: a call that failed on one that did not was never sent. */
    get opened(): boolean;
    /** Whether the stream can still carry calls. */
    get alive(): boolean;
    /**
     * call sends one request ({op, resource, ...}) and resolves with the
     * status and body the JSON API would give. Aborting signal stops waiting
     * for the answer; the server may still carry the request out.
     */
    call(req: Record<string, unknown>, signal?: AbortSignal): Promise<RpcAnswer>;
    /** close ends the stream; waiting calls fail. */
    close(): void;
}
