import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Checker } from './guard.js';
import { type Decision } from './token.js';
/** What the middleware attaches to an accepted request as req.fencing. */
export interface Fence {
    resource: string;
    token: bigint;
    signature?: string;
    decision: Decision;
}
export interface FencingOptions {
    /** The resource a request writes; default its one X-Resource-Id header. Throwing makes it a 400. */
    resource?: (req: IncomingMessage) => string;
    /**
     * Hold the resource until the response is finished (default true), so
     * a request that passed the check cannot write after a newer token's
     * request. Turn it off only when the handler fences its own write.
     */
    serialize?: boolean;
    /** Called with every decision (metrics, logs). */
    onDecision?: (req: IncomingMessage, resource: string, decision: Decision) => void;
}
/** refusalBody is the 409 body of a refused decision, as fenceview's server and Go middleware write it. */
export declare function refusalBody(d: Decision): {
    error: string;
    accepted: false;
    reason: string;
    presented: bigint;
    required: bigint;
};
/** A request the middleware accepted: req.fencing is set. */
export type FencedRequest = IncomingMessage & {
    fencing?: Fence;
};
/**
 * fencingMiddleware is the seed's middleware done right: the check and the
 * record are one atomic step of checker, a bad token is 400, a stale one
 * 409 with X-Required-Token, and an accepted request runs next() with
 * req.fencing set. It is Express's (req, res, next) and works on Node's own
 * http server as well:
 *
 *   app.use(fencingMiddleware(guard));                        // Express
 *   http.createServer((req, res) => mw(req, res, () => handler(req, res)));
 *   fastify.addHook('onRequest', fencingMiddleware.fastify(guard));
 */
export declare function fencingMiddleware(checker: Checker, opts?: FencingOptions): (req: FencedRequest, res: ServerResponse, next: (err?: unknown) => void) => Promise<void>;
export declare namespace fencingMiddleware {
    var fastify: (checker: Checker, opts?: FencingOptions) => (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<void>;
}
/** The parts of Fastify's request and reply the hook uses. */
interface FastifyRequestLike {
    raw: IncomingMessage;
    fencing?: Fence;
}
interface FastifyReplyLike {
    raw: ServerResponse;
    code(status: number): FastifyReplyLike;
    header(name: string, value: string): FastifyReplyLike;
    type(contentType: string): FastifyReplyLike;
    send(payload: string): unknown;
}
export {};
