import { readFileSync } from 'node:fs';

let version: string | undefined;

/**
 * fcctl's own version, from its package.json (read once).
 * @example fcctlVersion() // '0.1.0'
 */
export function fcctlVersion(): string {
  version ??= (
    JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
  return version;
}
