export interface HttpAnswer {
    status: number;
    headers: {
        get(name: string): string | null;
    };
    text: string;
}
export type Requester = (url: string, init: {
    method: string;
    headers: Record<string, string>;
    body?: string | undefined;
    signal?: AbortSignal | undefined;
}, maxBody: number) => Promise<HttpAnswer>;
/** viaFetch makes requests with a fetch function (the caller's). */
export declare function viaFetch(f: typeof fetch): Requester;
/** viaNodeHttp makes requests with node:http(s) over keep-alive connections. */
export declare function viaNodeHttp(): Requester;
