/**
 * `doctor --isolation`, the reading side: the facts of the publisher's vhost from the RabbitMQ
 * management API, the registered app keys from the FC database. The decision is `decide.ts` (pure);
 * this module only reads.
 */
import { DELIVERY_EXCHANGE } from '../../amqp/connect.js';
import type { Db } from '../../db/connect.js';
import { selectAppKeys } from './sql.js';
import { type AppKeys, DLQ_SUFFIX, type IsolationFacts, type IsolationTarget } from './types.js';

/**
 * The registered app keys, `application_info.app_key` of every row whatever its status.
 * @example await registeredAppKeys(await ctx.fcDb()) // ['100021', 'c1', …]
 */
export async function registeredAppKeys(db: Db): Promise<string[]> {
  const { sql, params } = selectAppKeys();
  const rows = await db.query<{ app_key: string }>(sql, params);
  return rows.map((r) => r.app_key);
}

/**
 * Reads every fact the decision needs. Management API failures throw (EnvironmentError, one line,
 * password masked); a failure to read the app keys is a fact (`appKeys.ok === false`).
 */
export async function inspectIsolation(
  target: IsolationTarget,
  appKeys: () => Promise<readonly string[]>,
  describe: (err: unknown) => string,
): Promise<IsolationFacts> {
  const { api, vhost, publisher, consumerQueue, consumerUsers } = target;
  const keys: Promise<AppKeys> = appKeys().then(
    (k) => ({ ok: true, keys: k }),
    (err: unknown) => ({ ok: false, reason: describe(err) }),
  );
  // first alone: a refused login or an unreachable API is then one error, not eight
  const vhostExists = await api.vhostExists(vhost);
  const queueNames = [consumerQueue, `${consumerQueue}${DLQ_SUFFIX}`];
  const [
    permissions,
    topicPermissions,
    exchange,
    policies,
    operatorPolicies,
    bindings,
    queues,
    vhostPermissions,
    users,
  ] = await Promise.all([
    api.permissions(vhost, publisher),
    api.topicPermissions(vhost, publisher),
    api.exchange(vhost, DELIVERY_EXCHANGE),
    api.policies(vhost),
    api.operatorPolicies(vhost),
    api.bindingsFrom(vhost, DELIVERY_EXCHANGE),
    Promise.all(queueNames.map((name) => api.queue(vhost, name))),
    api.vhostPermissions(vhost),
    api.userTags(),
  ]);
  const onVhost = new Set(vhostPermissions.map((p) => p.user));
  return {
    vhost,
    vhostExists,
    publisher,
    consumerQueue,
    permissions,
    topicPermissions,
    exchange,
    policies,
    operatorPolicies,
    bindings: bindings.filter((b) => b.source === DELIVERY_EXCHANGE),
    queues: Object.fromEntries(queueNames.map((name, i) => [name, queues[i] ?? null])),
    appKeys: await keys,
    vhostPermissions,
    userTags: Object.fromEntries(users.filter((u) => onVhost.has(u.name)).map((u) => [u.name, u.tags])),
    consumerUsers,
    managementUser: api.user,
  };
}
