import { UsageError } from '../cli/exit.js';
import { maskUrl } from './mask.js';

/** What to do about a URL whose raw `%`, `#`, `/` or `?` in its password breaks it. */
export const ENCODE_HINT =
  'percent-encode % # / ? @ : in its user or password (%25 %23 %2F %3F %40 %3A), or give the password in a file';

/**
 * The URL with `password` as its password, percent-encoded: a password from
 * `FCCTL_*_PASSWORD(_FILE)` may hold `%`, `#`, `@`, `:` or `/` as they are. Exit 2 when the URL
 * already has a password (two sources for one secret: which one counts would be a guess) or is
 * not a URL. Used for the database URLs and the AMQP URL alike, before any driver sees them.
 * @example withPassword('amqp', 'amqp://pub@mq/fcctl', 'p#w') // 'amqp://pub:p%23w@mq/fcctl'
 */
export function withPassword(what: string, url: string, password: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`${what} is not a valid URL: ${maskUrl(url)}`);
  }
  if (parsed.password !== '')
    throw new UsageError(`${what} has a password and its password setting is set too: keep one (${maskUrl(url)})`);
  if (parsed.username === '') throw new UsageError(`${what} names no user for its password setting: ${maskUrl(url)}`);
  // encodeURIComponent leaves ! ' ( ) * as they are, which userinfo allows
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

/**
 * A URL whose password is not percent-encoded fails to parse (`#`, `/`, `?`) or to decode (`%`):
 * exit 2 saying so, in one line with the URL masked; any other URL is returned as it is.
 * @example checkUrlEncoding('amqpUrl', 'amqp://u:50%off@mq/') // throws UsageError
 */
export function checkUrlEncoding(what: string, url: string): string {
  const hint = ENCODE_HINT;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // without a user part the URL's own checks say what is wrong with it
    if (!url.includes('@')) return url;
    throw new UsageError(`${what} is not a valid URL: ${maskUrl(url)} (${hint})`);
  }
  try {
    decodeURIComponent(parsed.username);
    decodeURIComponent(parsed.password);
  } catch {
    throw new UsageError(`${what} has a stray % in its user or password: ${maskUrl(url)} (${hint})`);
  }
  return url;
}
