/**
 * Masks the password of a URL so it can be shown; unparsable text is masked whole, since it
 * might be a secret put in the wrong place.
 * @example maskUrl('mysql://u:pw@h:3306/db') // 'mysql://u:***@h:3306/db'
 */
export function maskUrl(value: string): string {
  try {
    const url = new URL(value);
    if (!url.password) return hasUnreadPassword(value) ? redact(value, []) : value;
    url.password = '***';
    return url.toString();
  } catch {
    return '***';
  }
}

/**
 * A `user:password@` the URL parser did not read as one: a raw `?`, `#` or `/` in the password
 * (or the user) ends the host early, so `amqps://u:2024?Spring@mq/fc` parses as host `u`, port
 * 2024 and a query, with no password to mask — and was shown whole.
 * @example hasUnreadPassword('amqps://u:2024?Spring@mq/fc') // true
 */
export function hasUnreadPassword(value: string): boolean {
  try {
    if (new URL(value).password) return false;
  } catch {
    return false;
  }
  return USERINFO.test(value);
}

/** `scheme://user:password@` as written, the user without `:`, `/` or `@` (as `redact` reads it). */
const USERINFO = /^[a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:[^@\s]*@/i;

/**
 * Removes every known secret and URL password from a free text (error messages from drivers
 * sometimes echo the connection string).
 * @example redact('failed: mysql://u:pw@h/db', ['pw']) // 'failed: mysql://u:***@h/db'
 */
export function redact(text: string, secrets: readonly string[]): string {
  // The lookbehind starts a scheme only where one can start: without it, every letter of a long
  // word was a new start and the scan took time quadratic in its length.
  let out = text.replace(/(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:)([^@\s]*)@/gi, '$1***@');
  for (const secret of secrets) {
    if (secret.length >= 3) out = out.split(secret).join('***');
  }
  return out;
}
