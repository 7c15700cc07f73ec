/**
 * `doctor --isolation`, the reading side: what the publisher's URL says (user, vhost), the facts
 * of that vhost from the RabbitMQ management API, the registered app keys from the FC database.
 * The decision is `isolation.ts` (pure); this module only reads.
 */
import { DELIVERY_EXCHANGE } from '../amqp/connect.js';
import { ManagementClient } from '../amqp/management.js';
import { UsageError } from '../cli/exit.js';
import { maskUrl } from '../config/mask.js';
import type { Db } from '../db/connect.js';
import type { CheckResult } from './checks.js';
import {
  type AppKeys,
  decideIsolation,
  DLQ_SUFFIX,
  type IsolationFacts,
  ISOLATION_CHECKS,
  publisherOf,
} from './isolation.js';

/** What `--isolation` looks at: the API, the publisher and its vhost, the consumer queue and users. */
export interface IsolationTarget {
  readonly api: ManagementClient;
  readonly publisher: string;
  readonly vhost: string;
  readonly consumerQueue: string;
  /** `--consumer-user`: the users who may read the delivery exchange (empty: not given) */
  readonly consumerUsers: readonly string[];
}

/**
 * Checks the settings `--isolation` needs before anything connects: the management URL (set, and
 * http or https) and the publisher's AMQP URL (its user and vhost are what is checked), and that no
 * `--consumer-user` is the publisher (it must read nothing). Exit 2 (UsageError) naming the
 * variable or option otherwise.
 * @example isolationTarget({ amqpUrl: 'amqp://pub:pw@mq/fcctl', amqpManagementUrl: 'http://mon:pw@mq:15672' }, 'svc-hall.fc.answer.snapshot.v2', { consumerUsers: ['svc-hall'] })
 */
export function isolationTarget(
  settings: { amqpUrl: string | undefined; amqpManagementUrl: string | undefined },
  consumerQueue: string,
  options: { timeoutMs?: number; consumerUsers?: readonly string[] } = {},
): IsolationTarget {
  if (settings.amqpManagementUrl === undefined) {
    throw new UsageError(
      '--isolation reads the RabbitMQ management API: set FCCTL_AMQP_MANAGEMENT_URL (or --amqp-management-url), e.g. http://user:pass@host:15672',
    );
  }
  const api = new ManagementClient(settings.amqpManagementUrl, options);
  if (settings.amqpUrl === undefined)
    throw new UsageError('--isolation checks the publisher of FCCTL_AMQP_URL: set FCCTL_AMQP_URL (or --amqp-url)');
  const publisher = publisherOf(settings.amqpUrl);
  if (publisher === null) throw new UsageError(`amqpUrl is not a valid URL: ${maskUrl(settings.amqpUrl)}`);
  const consumerUsers = [...new Set(options.consumerUsers ?? [])];
  if (consumerUsers.includes(publisher.user)) {
    throw new UsageError(
      `--consumer-user ${JSON.stringify(publisher.user)} is the publisher of FCCTL_AMQP_URL: the publisher must read nothing, it cannot be a consumer user`,
    );
  }
  return { api, publisher: publisher.user, vhost: publisher.vhost, consumerQueue, consumerUsers };
}

/**
 * The registered app keys, `application_info.app_key` of every row whatever its status.
 * @example await registeredAppKeys(await ctx.fcDb()) // ['100021', 'c1', …]
 */
export async function registeredAppKeys(db: Db): Promise<string[]> {
  const rows = await db.query<{ app_key: string }>('SELECT app_key FROM application_info ORDER BY app_key');
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

/**
 * The isolation items for `doctor`: one result per item, or a single failed
 * `isolation: management API` line naming why the API could not be read.
 * @example for (const r of await checkIsolation(target, () => registeredAppKeys(db), String)) console.log(r.check, r.status)
 */
export async function checkIsolation(
  target: IsolationTarget,
  appKeys: () => Promise<readonly string[]>,
  describe: (err: unknown) => string,
): Promise<CheckResult[]> {
  let facts: IsolationFacts;
  try {
    facts = await inspectIsolation(target, appKeys, describe);
  } catch (err) {
    return [{ check: ISOLATION_CHECKS.api, status: 'fail', detail: describe(err) }];
  }
  return decideIsolation(facts);
}
