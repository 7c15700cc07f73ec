import { readFileSync } from 'node:fs';
import { UsageError } from '../cli/exit.js';
import { maskUrl } from './mask.js';
import { withPassword } from './password.js';

/**
 * Every setting fcctl reads, with where it may come from. Precedence (SPEC §2):
 * flag > environment (`FCCTL_*`, or `FCCTL_*_FILE` naming a file that holds the value) >
 * `--config FILE` (JSON object with these keys) > default.
 */
export const SETTINGS = {
  fcDatabaseUrl: { env: 'FCCTL_FC_DATABASE_URL', flag: 'fcDatabaseUrl', kind: 'url' },
  // A URL's password kept apart from it (best from a `_FILE`: any characters, never in `ps`);
  // filled into the URL's password (see PASSWORDS). Secrets have no flag.
  fcDatabasePassword: { env: 'FCCTL_FC_DATABASE_PASSWORD', flag: null, kind: 'secret' },
  shDatabaseUrl: { env: 'FCCTL_SH_DATABASE_URL', flag: 'shDatabaseUrl', kind: 'url' },
  shDatabasePassword: { env: 'FCCTL_SH_DATABASE_PASSWORD', flag: null, kind: 'secret' },
  amqpUrl: { env: 'FCCTL_AMQP_URL', flag: 'amqpUrl', kind: 'url' },
  amqpPassword: { env: 'FCCTL_AMQP_PASSWORD', flag: null, kind: 'secret' },
  // RabbitMQ's management API (http://user:pass@host:15672), read by `doctor --isolation` only.
  amqpManagementUrl: { env: 'FCCTL_AMQP_MANAGEMENT_URL', flag: 'amqpManagementUrl', kind: 'url' },
  flowUrl: { env: 'FCCTL_FLOW_URL', flag: 'flowUrl', kind: 'url' },
  // The replica whose lag `--max-lag` reads (a command's `--replica-url`); unset: the database being read.
  replicaUrl: { env: 'FCCTL_REPLICA_URL', flag: 'replicaUrl', kind: 'url' },
  appKey: { env: 'FCCTL_APP_KEY', flag: 'appKey', kind: 'text' },
  appCode: { env: 'FCCTL_APP_CODE', flag: 'appCode', kind: 'text' },
  // IANA zone of the service's DATETIMEs (occurredAt's offset); unset: the FC database's own zone.
  serviceTimeZone: { env: 'FCCTL_SERVICE_TIME_ZONE', flag: 'serviceTimeZone', kind: 'text' },
  // Secrets have no flag: a flag shows in `ps` and shell history.
  appSecret: { env: 'FCCTL_APP_SECRET', flag: null, kind: 'secret' },
  // Connections of each database's main pool (FC, SH), plus 2 for batched writes: a deployment's
  // choice against the server's max_connections, so no flag.
  dbPoolSize: { env: 'FCCTL_DB_POOL_SIZE', flag: null, kind: 'text' },
} as const;

/** Each URL setting whose password may come from a setting of its own. */
const PASSWORDS = [
  ['fcDatabaseUrl', 'fcDatabasePassword'],
  ['shDatabaseUrl', 'shDatabasePassword'],
  ['amqpUrl', 'amqpPassword'],
] as const;

export type SettingName = keyof typeof SETTINGS;
export type SettingSource = 'flag' | 'env' | 'env-file' | 'config' | 'config-file' | 'unset';
export interface Setting {
  readonly value: string | undefined;
  readonly source: SettingSource;
}
export type Config = { readonly [K in SettingName]: Setting };

export interface ConfigInputs {
  /** parsed global flags (commander camelCase names) */
  readonly flags: Readonly<Record<string, unknown>>;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** reads a file as UTF-8; injected so tests can count reads */
  readonly readFile?: (path: string) => string;
}

const NAMES = Object.keys(SETTINGS) as SettingName[];

function readValueFile(readFile: (p: string) => string, path: string, what: string): string {
  let value: string;
  try {
    // One trailing newline is how editors and `echo` leave files; it is never part of a secret.
    value = readFile(path).replace(/\r?\n$/, '');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_ENCODING_INVALID_ENCODED_DATA') throw new UsageError(`${what}: ${path} is not UTF-8 text`);
    throw new UsageError(`${what}: cannot read ${path}: ${code ?? 'error'}`);
  }
  // An empty file is a secret not mounted (an empty variable counts as unset): an empty password
  // filled into a URL read as a wrong password (exit 3, "access denied"), not as the file's fault.
  if (value === '') throw new UsageError(`${what}: ${path} is empty`);
  return value;
}

/** A file's text; bytes that are not UTF-8 are refused, never turned into U+FFFD. */
function readUtf8File(path: string): string {
  return new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(path));
}

/** `fcDatabaseUrl` → `--fc-database-url` */
const flagName = (flag: string) => `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

function loadConfigFile(readFile: (p: string) => string, path: string): Record<string, unknown> {
  const text = readValueFile(readFile, path, '--config');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--config ${path}: not valid JSON (${(err as Error).message.split('\n')[0]})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new UsageError(`--config ${path}: must hold a JSON object`);
  }
  const allowed = new Set<string>([...NAMES, ...NAMES.map((n) => `${n}File`)]);
  for (const [key, value] of Object.entries(parsed)) {
    if (!allowed.has(key)) throw new UsageError(`--config ${path}: unknown key "${key}"`);
    if (typeof value !== 'string') throw new UsageError(`--config ${path}: "${key}" must be a string`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * Resolves the effective configuration. Throws UsageError (exit 2) on a bad config file.
 * @example resolveConfig({ flags: {}, env: process.env }).fcDatabaseUrl.value
 */
export function resolveConfig(inputs: ConfigInputs): Config {
  const readFile = inputs.readFile ?? readUtf8File;
  const configPath = inputs.flags['config'];
  const file = typeof configPath === 'string' ? loadConfigFile(readFile, configPath) : {};
  const out = {} as Record<SettingName, Setting>;
  for (const name of NAMES) {
    const spec = SETTINGS[name];
    const flagValue = spec.flag ? inputs.flags[spec.flag] : undefined;
    const envValue = inputs.env[spec.env];
    const envFile = inputs.env[`${spec.env}_FILE`];
    const fileValue = file[name];
    const fileFile = file[`${name}File`];
    let setting: Setting;
    // An empty flag (`--fc-database-url "$UNSET"`) must not fall through to another source.
    if (flagValue === '' && spec.flag)
      throw new UsageError(`${flagName(spec.flag)} is empty: leave it out to use ${spec.env} or the config file`);
    if (typeof flagValue === 'string' && flagValue !== '') setting = { value: flagValue, source: 'flag' };
    else if (envValue !== undefined && envValue !== '') setting = { value: envValue, source: 'env' };
    else if (envFile) setting = { value: readValueFile(readFile, envFile, `${spec.env}_FILE`), source: 'env-file' };
    else if (typeof fileValue === 'string') setting = { value: fileValue, source: 'config' };
    else if (typeof fileFile === 'string')
      setting = { value: readValueFile(readFile, fileFile, `${name}File`), source: 'config-file' };
    else setting = { value: undefined, source: 'unset' };
    out[name] = setting;
  }
  for (const [urlName, passwordName] of PASSWORDS) {
    const url = out[urlName];
    const password = out[passwordName].value;
    // the URL keeps its source; `config show` lists the password's on its own row
    if (url.value !== undefined && password !== undefined)
      out[urlName] = { value: withPassword(urlName, url.value, password), source: url.source };
  }
  return out;
}

/** The value as it may be shown: secrets hidden, URL passwords masked. */
export function displayValue(name: SettingName, setting: Setting): string {
  if (setting.value === undefined) return '(unset)';
  const kind = SETTINGS[name].kind;
  if (kind === 'secret') return '***';
  if (kind === 'url') return maskUrl(setting.value);
  return setting.value;
}

/** Every secret value in the config (passwords inside URLs included), for redacting messages. */
export function secretsOf(config: Config): string[] {
  const secrets: string[] = [];
  for (const name of NAMES) {
    const value = config[name].value;
    if (value === undefined) continue;
    const kind = SETTINGS[name].kind;
    if (kind === 'secret') secrets.push(value);
    if (kind === 'url') {
      try {
        const password = new URL(value).password;
        if (password) secrets.push(password, decodeURIComponent(password));
      } catch {
        secrets.push(value);
      }
    }
  }
  return secrets;
}

/**
 * The value of a setting a command cannot do without; exit 2 naming the variable otherwise.
 * @example requireSetting(config, 'fcDatabaseUrl')
 */
export function requireSetting(config: Config, name: SettingName): string {
  const value = config[name].value;
  if (value === undefined) {
    const spec = SETTINGS[name];
    const flag = spec.flag ? `${flagName(spec.flag)} or ` : '';
    throw new UsageError(`${name} is not configured: set ${flag}${spec.env}`);
  }
  return value;
}
