import { parseDatabaseUrl } from './connect.js';

/**
 * A database URL as it enters the parameters: host, port and database only.
 * @example databaseIdentity('mysql://u:p@db.local:3306/fc') // 'db.local:3306/fc'
 */
export function databaseIdentity(url: string): string {
  // bad input (exit 2) before anything is read or locked
  const u = parseDatabaseUrl('database', url);
  return `${u.hostname}:${u.port || '3306'}/${decodeURIComponent(u.pathname.replace(/^\//, ''))}`;
}
