import { randomBytes } from 'node:crypto';
import { testAmqpUrl } from './db.js';

/** The management API of the test broker, as its administrator (set by `scripts/services.sh env`). */
export function testManagementUrl(): string {
  const url = process.env['FCCTL_TEST_AMQP_MANAGEMENT_URL'];
  if (!url)
    throw new Error('FCCTL_TEST_AMQP_MANAGEMENT_URL is not set: run tests through `npm test` (scripts/test.sh)');
  return url;
}

/** The test management URL with other credentials (for a wrong password or another user); never throws. */
export function managementUrlAs(user: string | undefined, password: string): string {
  const url = new URL(process.env['FCCTL_TEST_AMQP_MANAGEMENT_URL'] ?? 'http://fcctl@127.0.0.1:35674');
  if (user !== undefined) url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  return url.toString();
}

const enc = encodeURIComponent;

/**
 * One call to the management API as the test administrator, for arranging a test; throws on any
 * status but 2xx (and 404 when `allow404`).
 * @example await mgmt('PUT', `/api/vhosts/${enc(vhost)}`)
 */
export async function mgmt(
  method: 'GET' | 'PUT' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
  options: { allow404?: boolean } = {},
): Promise<unknown> {
  const base = new URL(testManagementUrl());
  const auth = `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}`;
  base.username = '';
  base.password = '';
  const res = await fetch(new URL(path, base), {
    method,
    headers: { authorization: auth, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  if (res.status === 404 && options.allow404) return null;
  if (res.status < 200 || res.status >= 300) throw new Error(`${method} ${path}: HTTP ${res.status} ${text}`);
  return text ? (JSON.parse(text) as unknown) : null;
}

export interface IsolatedVhost {
  readonly vhost: string;
  /** the publisher user (unique name) and its password */
  readonly publisher: { readonly user: string; readonly password: string };
  /** FCCTL_AMQP_URL for the publisher on this vhost */
  readonly amqpUrl: string;
  /** the vhost as it appears in API paths */
  readonly path: string;
  /** creates a user with a unique name (and the given tags), dropped with the vhost */
  user(prefix: string, tags: string): Promise<{ user: string; password: string }>;
  /** deletes the vhost (and everything in it) and the users */
  drop(): Promise<void>;
}

/**
 * A fresh vhost with a publisher user that has no permissions yet; the test administrator gets
 * full permissions on it to arrange exchanges, queues and bindings.
 */
export async function isolatedVhost(prefix = 'iso'): Promise<IsolatedVhost> {
  const id = randomBytes(4).toString('hex');
  const vhost = `fcctl-test-${prefix}-${id}`;
  const path = enc(vhost);
  const users: string[] = [];
  const admin = decodeURIComponent(new URL(testManagementUrl()).username);
  await mgmt('PUT', `/api/vhosts/${path}`);
  await mgmt('PUT', `/api/permissions/${path}/${enc(admin)}`, { configure: '.*', write: '.*', read: '.*' });
  const user = async (p: string, tags: string) => {
    const name = `fcctl-test-${p}-${id}`;
    const password = `pw-${randomBytes(6).toString('hex')}`;
    await mgmt('PUT', `/api/users/${enc(name)}`, { password, tags });
    users.push(name);
    return { user: name, password };
  };
  const publisher = await user('pub', '');
  const amqp = new URL(testAmqpUrl());
  amqp.username = enc(publisher.user);
  amqp.password = enc(publisher.password);
  amqp.pathname = `/${path}`;
  return {
    vhost,
    publisher,
    amqpUrl: amqp.toString(),
    path,
    user,
    drop: async () => {
      await mgmt('DELETE', `/api/vhosts/${path}`, undefined, { allow404: true });
      for (const u of users) await mgmt('DELETE', `/api/users/${enc(u)}`, undefined, { allow404: true });
    },
  };
}
