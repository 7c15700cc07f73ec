import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * A claim owner unique to this process run: host, pid and a random suffix. Every claimed table
 * (the outbox, the apply commands) writes it into `claim_owner`, and every guarded write checks it.
 */
export function newClaimOwner(): string {
  return `${hostname().slice(0, 60)}:${process.pid}:${randomBytes(6).toString('hex')}`;
}
