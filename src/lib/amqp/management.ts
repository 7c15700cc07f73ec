/**
 * A small, read-only client of RabbitMQ's management HTTP API, for `doctor --isolation`: only the
 * GETs that check needs. Basic auth comes from the URL's user and password (the URL itself is sent
 * without them); every request has a timeout. Every failure is one line with the password masked:
 * a URL that is not http(s) is a UsageError (exit 2); an unreachable API, refused credentials, a
 * user not allowed to read something, another HTTP status or a body that is not the expected JSON
 * is an EnvironmentError (exit 3). A 404 is an answer ("no such thing"), never an error.
 *
 * Reading permissions, topic permissions, operator policies and users needs a user with the
 * `administrator` tag (RabbitMQ answers 401 "Not administrator user" to a `monitoring` user); the
 * client only ever sends GETs.
 */
import { EnvironmentError, UsageError } from '../cli/exit.js';
import { maskUrl } from '../config/mask.js';

/** A user's permissions on a vhost: three unanchored Erlang regexes ('' grants nothing). */
export interface Permissions {
  readonly configure: string;
  readonly write: string;
  readonly read: string;
}

/** A topic permission: routing-key regexes for one exchange (by name, not a pattern). */
export interface TopicPermission {
  readonly exchange: string;
  readonly write: string;
  readonly read: string;
}

export interface ExchangeInfo {
  readonly name: string;
  readonly type: string;
  readonly durable: boolean;
  readonly autoDelete: boolean;
  /** an internal exchange takes no publishes from clients, only exchange-to-exchange bindings */
  readonly internal: boolean;
  readonly arguments: Readonly<Record<string, unknown>>;
  /** the name of the policy that applies to it now, null when none does */
  readonly policy: string | null;
}

/** A policy or an operator policy of a vhost. */
export interface Policy {
  readonly name: string;
  /** an Erlang regex over object names */
  readonly pattern: string;
  /** `exchanges`, `queues`, `all` (3.10), `classic_queues`, `quorum_queues`, `streams` (3.12+) */
  readonly applyTo: string;
  readonly priority: number;
  readonly definition: Readonly<Record<string, unknown>>;
}

/** One user's permissions on a vhost, as `GET /api/vhosts/{vhost}/permissions` lists them. */
export interface UserPermissions extends Permissions {
  readonly user: string;
}

/** A user and its tags (`administrator`, `monitoring`, …); never its password hash. */
export interface UserTags {
  readonly name: string;
  readonly tags: readonly string[];
}

export interface BindingInfo {
  readonly source: string;
  readonly destination: string;
  readonly destinationType: 'queue' | 'exchange';
  readonly routingKey: string;
}

export interface QueueInfo {
  readonly name: string;
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly exclusive: boolean;
  /** `classic`, `quorum`, `stream`; '' when the broker does not say */
  readonly type: string;
}

export interface ManagementClientOptions {
  /** per request, including reading the body (default 10 s) */
  readonly timeoutMs?: number;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 300);

/**
 * The management API of one broker, read as the user in its URL.
 * @example
 * const api = new ManagementClient('http://monitor:pw@127.0.0.1:15672');
 * const perms = await api.permissions('fcctl', 'fc-publisher'); // null: no permissions there
 */
export class ManagementClient {
  /** the URL without credentials, ending in `/` (a path prefix, e.g. behind a proxy, is kept) */
  private readonly base: URL;
  private readonly authorization: string | undefined;
  private readonly timeoutMs: number;
  /** the user the API is read as ('' when the URL names none) */
  readonly user: string;
  /** the URL as it may be shown */
  readonly shown: string;

  constructor(url: string, options: ManagementClientOptions = {}) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new UsageError(`amqpManagementUrl is not a valid URL: ${maskUrl(url)}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new UsageError(`amqpManagementUrl must start with http:// or https://: ${maskUrl(url)}`);
    }
    this.shown = maskUrl(url);
    this.user = decodeURIComponent(parsed.username);
    const password = decodeURIComponent(parsed.password);
    this.authorization =
      parsed.username || parsed.password
        ? `Basic ${Buffer.from(`${this.user}:${password}`).toString('base64')}`
        : undefined;
    parsed.username = '';
    parsed.password = '';
    parsed.search = '';
    parsed.hash = '';
    if (!parsed.pathname.endsWith('/')) parsed.pathname += '/';
    this.base = parsed;
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  /**
   * GET `api/<path segments>` (each segment percent-encoded, so `/` as a vhost is `%2F`); the parsed
   * JSON, or null on 404. `what` names the object in error messages.
   */
  private async get(segments: readonly string[], what: string, query = ''): Promise<unknown | null> {
    const target = new URL(`api/${segments.map(encodeURIComponent).join('/')}${query}`, this.base);
    const prefix = `RabbitMQ management API at ${this.shown}`;
    let res: Response;
    let text: string;
    try {
      res = await fetch(target, {
        method: 'GET',
        headers: { accept: 'application/json', ...(this.authorization ? { authorization: this.authorization } : {}) },
        // A redirect would carry the credentials elsewhere (or drop them): name it instead.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
      if (e?.name === 'TimeoutError' || e?.name === 'AbortError') {
        throw new EnvironmentError(`${prefix} did not answer within ${this.timeoutMs / 1000} s (reading ${what})`, {
          cause: err,
        });
      }
      const reason = e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
      throw new EnvironmentError(`cannot reach the ${prefix}: ${oneLine(reason)}`, { cause: err });
    }
    if (res.status === 404) return null;
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    const reason = isObj(body) ? oneLine(str(body['reason'])) : '';
    if (res.status === 401 || res.status === 403) {
      // "Login failed" is the answer to a wrong user or password; anything else is a user who logged
      // in but may not read this (no administrator tag, no access to the vhost).
      if (res.status === 401 && (reason === '' || /login failed/i.test(reason))) {
        throw new EnvironmentError(
          `${prefix}: the management API refused the credentials of user "${this.user}" (HTTP 401)`,
        );
      }
      throw new EnvironmentError(
        `${prefix}: user "${this.user}" may not read ${what} (HTTP ${res.status}${reason ? `: ${reason}` : ''}); doctor --isolation needs a user with the administrator tag`,
      );
    }
    if (res.status >= 300 && res.status < 400) {
      throw new EnvironmentError(
        `${prefix} answered a redirect (HTTP ${res.status}) to ${maskUrl(res.headers.get('location') ?? '?')}: configure that URL instead`,
      );
    }
    if (res.status < 200 || res.status >= 300) {
      throw new EnvironmentError(`${prefix} answered HTTP ${res.status} reading ${what}${reason ? `: ${reason}` : ''}`);
    }
    if (body === undefined) throw new EnvironmentError(`${prefix} answered something that is not JSON reading ${what}`);
    return body;
  }

  private malformed(what: string): EnvironmentError {
    return new EnvironmentError(
      `RabbitMQ management API at ${this.shown} answered an unexpected document reading ${what}`,
    );
  }

  private async list(segments: readonly string[], what: string, query = ''): Promise<Obj[]> {
    const body = await this.get(segments, what, query);
    if (body === null) return [];
    if (!Array.isArray(body) || !body.every(isObj)) throw this.malformed(what);
    return body;
  }

  /** Whether the vhost exists. */
  async vhostExists(vhost: string): Promise<boolean> {
    return (await this.get(['vhosts', vhost], `vhost ${vhost}`, '?columns=name')) !== null;
  }

  /** `GET /api/permissions/{vhost}/{user}`; null when the user has none there (or does not exist). */
  async permissions(vhost: string, user: string): Promise<Permissions | null> {
    const what = `the permissions of ${user} on vhost ${vhost}`;
    const body = await this.get(['permissions', vhost, user], what);
    if (body === null) return null;
    if (!isObj(body)) throw this.malformed(what);
    return { configure: str(body['configure']), write: str(body['write']), read: str(body['read']) };
  }

  /** `GET /api/vhosts/{vhost}/permissions`: every user with permissions on the vhost (none when it does not exist). */
  async vhostPermissions(vhost: string): Promise<UserPermissions[]> {
    const rows = await this.list(['vhosts', vhost, 'permissions'], `the permissions on vhost ${vhost}`);
    return rows.map((r) => ({
      user: str(r['user']),
      configure: str(r['configure']),
      write: str(r['write']),
      read: str(r['read']),
    }));
  }

  /**
   * `GET /api/users?columns=name,tags`: every user's name and tags, never a password hash. Tags are
   * a list (3.9+) or one comma-separated string (older brokers).
   */
  async userTags(): Promise<UserTags[]> {
    const rows = await this.list(['users'], 'the users and their tags', '?columns=name,tags');
    return rows.map((r) => {
      const tags = r['tags'];
      const list = Array.isArray(tags) ? tags.map(str) : str(tags).split(',');
      return { name: str(r['name']), tags: list.map((t) => t.trim()).filter((t) => t !== '') };
    });
  }

  /** `GET /api/topic-permissions/{vhost}/{user}`: one entry per exchange that has one. */
  async topicPermissions(vhost: string, user: string): Promise<TopicPermission[]> {
    const rows = await this.list(
      ['topic-permissions', vhost, user],
      `the topic permissions of ${user} on vhost ${vhost}`,
    );
    return rows.map((r) => ({ exchange: str(r['exchange']), write: str(r['write']), read: str(r['read']) }));
  }

  /** `GET /api/exchanges/{vhost}/{name}`: its arguments and the policy applied to it; null when missing. */
  async exchange(vhost: string, name: string): Promise<ExchangeInfo | null> {
    const what = `exchange ${name} on vhost ${vhost}`;
    const body = await this.get(['exchanges', vhost, name], what);
    if (body === null) return null;
    if (!isObj(body)) throw this.malformed(what);
    const policy = body['policy'];
    return {
      name: str(body['name']),
      type: str(body['type']),
      durable: body['durable'] === true,
      autoDelete: body['auto_delete'] === true,
      internal: body['internal'] === true,
      arguments: isObj(body['arguments']) ? body['arguments'] : {},
      policy: typeof policy === 'string' && policy !== '' ? policy : null,
    };
  }

  /** `GET /api/policies/{vhost}`. */
  async policies(vhost: string): Promise<Policy[]> {
    return (await this.list(['policies', vhost], `the policies of vhost ${vhost}`)).map(toPolicy);
  }

  /** `GET /api/operator-policies/{vhost}`. */
  async operatorPolicies(vhost: string): Promise<Policy[]> {
    return (await this.list(['operator-policies', vhost], `the operator policies of vhost ${vhost}`)).map(toPolicy);
  }

  /** `GET /api/exchanges/{vhost}/{name}/bindings/source`: every binding from it, to queues and exchanges. */
  async bindingsFrom(vhost: string, exchange: string): Promise<BindingInfo[]> {
    const rows = await this.list(
      ['exchanges', vhost, exchange, 'bindings', 'source'],
      `the bindings of exchange ${exchange} on vhost ${vhost}`,
    );
    return rows.map((r) => ({
      source: str(r['source']),
      destination: str(r['destination']),
      destinationType: r['destination_type'] === 'exchange' ? 'exchange' : 'queue',
      routingKey: str(r['routing_key']),
    }));
  }

  /** `GET /api/queues/{vhost}/{name}`; null when it does not exist. */
  async queue(vhost: string, name: string): Promise<QueueInfo | null> {
    const what = `queue ${name} on vhost ${vhost}`;
    const body = await this.get(['queues', vhost, name], what, '?columns=name,durable,auto_delete,exclusive,type');
    if (body === null) return null;
    if (!isObj(body)) throw this.malformed(what);
    return {
      name: str(body['name']),
      durable: body['durable'] === true,
      autoDelete: body['auto_delete'] === true,
      exclusive: body['exclusive'] === true,
      type: str(body['type']),
    };
  }
}

function toPolicy(r: Obj): Policy {
  return {
    name: str(r['name']),
    pattern: str(r['pattern']),
    applyTo: str(r['apply-to']),
    priority: typeof r['priority'] === 'number' ? r['priority'] : 0,
    definition: isObj(r['definition']) ? r['definition'] : {},
  };
}
