/**
 * The oldest servers fcctl supports (issue 35 §4), decided from `SELECT VERSION()`, pure.
 * MySQL 8.0.21: the oldest 8.0 whose SKIP LOCKED, window functions and `information_schema`
 * statistics fcctl's statements are checked against (docs/mysql-compatibility.md); MariaDB 10.6:
 * the first with `SKIP LOCKED`, which every claim uses.
 */

/** The oldest versions, as said in the refusal and the docs. */
export const OLDEST = { mysql: '8.0.21', mariadb: '10.6' } as const;

/** A server as `VERSION()` names it: MariaDB says so in the text (`10.11.6-MariaDB-0+deb12u1`). */
export interface ServerVersion {
  readonly flavour: 'mysql' | 'mariadb';
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
}

/**
 * Parses `VERSION()`; null when it is no version at all.
 * @example serverVersion('10.11.6-MariaDB-0+deb12u1') // { flavour: 'mariadb', major: 10, minor: 11, patch: 6 }
 * @example serverVersion('8.0.36') // { flavour: 'mysql', major: 8, minor: 0, patch: 36 }
 */
export function serverVersion(text: string): ServerVersion | null {
  // MariaDB 10.x behind a MySQL 5.5-compatible prefix in old replication set-ups: `5.5.5-10.11.6-MariaDB`.
  const m = /^(?:5\.5\.5-)?(\d+)\.(\d+)\.(\d+)/.exec(text.trim());
  if (!m) return null;
  return {
    flavour: /mariadb/i.test(text) ? 'mariadb' : 'mysql',
    major: Number(m[1]),
    minor: Number(m[2]),
    patch: Number(m[3]),
  };
}

/**
 * Null when the server is supported, else the one line that says why not and what is.
 * @example versionProblem('5.7.44') // 'MySQL 5.7.44 is older than fcctl supports (MySQL 8.0.21+, MariaDB 10.6+)'
 * @example versionProblem('8.0.36') // null
 */
export function versionProblem(text: string): string | null {
  const v = serverVersion(text);
  const supported = `(MySQL ${OLDEST.mysql}+, MariaDB ${OLDEST.mariadb}+)`;
  if (v === null) return `the server's version '${text.slice(0, 60)}' is not one fcctl recognises ${supported}`;
  const at = (major: number, minor: number, patch: number) =>
    v.major !== major ? v.major > major : v.minor !== minor ? v.minor > minor : v.patch >= patch;
  const ok = v.flavour === 'mariadb' ? at(10, 6, 0) : at(8, 0, 21);
  if (ok) return null;
  const name = v.flavour === 'mariadb' ? 'MariaDB' : 'MySQL';
  return `${name} ${v.major}.${v.minor}.${v.patch} is older than fcctl supports ${supported}`;
}
