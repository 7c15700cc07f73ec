/**
 * A guarded write matched no row: the row moved between the read (or the lock) and the write.
 * Thrown inside a transaction to roll it back; the runner that catches it decides again
 * (`projection repair-authoritative`: LOCAL_CHANGED; `retire-absent`: the transaction is retried).
 */
export class RowMoved extends Error {}
