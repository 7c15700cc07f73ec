/**
 * `doctor --isolation`: its settings checked before anything connects (`isolationTarget`), then the
 * facts read (`store.ts`) and decided (`decide.ts`), one check line per item.
 */
import { ManagementClient } from '../../amqp/management.js';
import { UsageError } from '../../cli/exit.js';
import { maskUrl } from '../../config/mask.js';
import type { CheckResult } from '../decide.js';
import { decideIsolation, externalWithoutUser, publisherOf } from './decide.js';
import { inspectIsolation } from './store.js';
import { type IsolationFacts, ISOLATION_CHECKS, type IsolationTarget } from './types.js';

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
  if (externalWithoutUser(settings.amqpUrl))
    throw new UsageError(
      "--isolation checks the publisher's account: with auth_mechanism=external write the certificate's login as the URL's user (amqps://LOGIN@host/vhost?…; EXTERNAL never sends it)",
    );
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
