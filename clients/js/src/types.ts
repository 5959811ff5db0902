// The types the client and its primitives share: the bodies of grants,
// leaders and semaphores as the server answers them. A module of its own
// so that client.ts, call.ts and primitives.ts need not import each other
// for their types.

/** The fencing envelope of a grant: the seed's token scope, signed. */
export interface Fencing {
  token: bigint;
  issuer: string;
  scope: string;
  issuedAt: string;
  keyId?: string;
  signature?: string;
  /** The envelope of a shared (reader's) grant: its signature is of the shared message. */
  shared?: boolean;
}

/** A grant of acquire or renew. */
export interface Grant {
  resourceId: string;
  holder: string;
  holdCount: number;
  expiresAt: string;
  leaseMs?: number;
  /** A shared (reader's) grant. */
  shared?: boolean;
  fencing: Fencing;
}

/** GET /v1/semaphores/{name}. */
export interface SemaphoreState {
  name: string;
  permits: number;
  held: { slot: number; resourceId: string; holder: string; token: bigint; expiresAt: string }[];
  free: number;
  waiters: number;
}

/** An election's leader. The term is the token of the election's lock. */
export interface Leader {
  candidate: string;
  value: string;
  term: bigint;
  since: string;
  expiresAt: string;
}

