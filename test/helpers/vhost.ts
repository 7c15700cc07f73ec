import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { testAmqpUrl } from './db.js';

const SERVICES = fileURLToPath(new URL('../../scripts/services.sh', import.meta.url));

/** A fresh, empty vhost on the local broker (no exchanges), for tests of a missing exchange. */
export function freshVhost(): { url: string; drop: () => void } {
  const name = `fcctl-test-${randomBytes(4).toString('hex')}`;
  execFileSync('bash', [SERVICES, 'add-vhost', name], { stdio: 'ignore' });
  const url = new URL(testAmqpUrl());
  url.pathname = `/${encodeURIComponent(name)}`;
  return {
    url: url.toString(),
    drop: () => execFileSync('bash', [SERVICES, 'delete-vhost', name], { stdio: 'ignore' }),
  };
}
