import { canonicalize } from './index.js';

/**
 * The digest of a run's or a scan's parameters: the fc.canon.v1 hash of their JSON. A run, a scan or
 * a pair is continued only with parameters of the same digest (`manifest scan` checkpoints, the
 * `reconcile run` folder, `reconcile run --all` pairs).
 * @example paramsDigest({ side: 'sh', database: 'db:3306/sh', schId: '5', formUuid: 'f…', shard: null, out: '/tmp/sh.jsonl' })
 */
export function paramsDigest(params: object): string {
  const r = canonicalize(JSON.stringify(params));
  if (!r.ok) throw new Error(`cannot hash the parameters: ${r.error.code}`);
  return r.hash;
}
