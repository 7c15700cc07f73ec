/**
 * `doctor --isolation`: the names it reports and the facts it decides over, shared by the decision
 * (`decide.ts`, `permissions.ts`) and the reader (`store.ts`).
 */
import type {
  BindingInfo,
  ExchangeInfo,
  Permissions,
  Policy,
  QueueInfo,
  TopicPermission,
  UserPermissions,
} from '../../amqp/management.js';
import type { ManagementClient } from '../../amqp/management.js';

/** The prefix of every v2 routing key (SPEC §4). */
export const ROUTING_KEY_PREFIX = 'fc.snapshot.v2.';

/** The svc-hall consumer queue (seed 000 §6); its dead-letter queue is this name plus `.dlq`. */
export const CONSUMER_QUEUE = 'svc-hall.fc.answer.snapshot.v2';
export const DLQ_SUFFIX = '.dlq';

/** The names of the items, in the order they are reported. */
export const ISOLATION_CHECKS = {
  vhost: 'isolation: vhost',
  exchange: 'isolation: delivery exchange',
  permissions: 'isolation: publisher permissions',
  topic: 'isolation: publisher topic permissions',
  bindings: 'isolation: bindings',
  readers: 'isolation: who can read the exchange',
  queues: 'isolation: consumer queues',
  alternateExchange: 'isolation: alternate exchange',
  /** reported instead of the items when the management API could not be read */
  api: 'isolation: management API',
} as const;

/** The registered app keys (`application_info.app_key`), or why they could not be read. */
export type AppKeys =
  | { readonly ok: true; readonly keys: readonly string[] }
  | { readonly ok: false; readonly reason: string };

/** Everything the decision needs, read from the management API and the FC database. */
export interface IsolationFacts {
  readonly vhost: string;
  readonly vhostExists: boolean;
  /** the publisher: the user of FCCTL_AMQP_URL */
  readonly publisher: string;
  readonly consumerQueue: string;
  /** null: the publisher has no permissions on the vhost */
  readonly permissions: Permissions | null;
  readonly topicPermissions: readonly TopicPermission[];
  /** null: the delivery exchange does not exist */
  readonly exchange: ExchangeInfo | null;
  readonly policies: readonly Policy[];
  readonly operatorPolicies: readonly Policy[];
  /** the bindings whose source is the delivery exchange */
  readonly bindings: readonly BindingInfo[];
  /** the consumer queue and its dlq by name; null: it does not exist */
  readonly queues: Readonly<Record<string, QueueInfo | null>>;
  readonly appKeys: AppKeys;
  /** every user with permissions on the vhost, the publisher included */
  readonly vhostPermissions: readonly UserPermissions[];
  /** the tags of the users of `vhostPermissions` by name (a user missing here has none) */
  readonly userTags: Readonly<Record<string, readonly string[]>>;
  /** the consumer's users (`--consumer-user`), who may read the exchange; empty: not given */
  readonly consumerUsers: readonly string[];
  /** the user the management API is read as */
  readonly managementUser: string;
}

/** What `--isolation` looks at: the API, the publisher and its vhost, the consumer queue and users. */
export interface IsolationTarget {
  readonly api: ManagementClient;
  readonly publisher: string;
  readonly vhost: string;
  readonly consumerQueue: string;
  /** `--consumer-user`: the users who may read the delivery exchange (empty: not given) */
  readonly consumerUsers: readonly string[];
}
