/**
 * A database that refuses the service's settings (issue 34 §8) — a wrong password, a database that
 * does not exist — is a misconfiguration, as real `bin/fcctl --follow` processes meet it: state
 * `misconfigured` with the server's reason, `/readyz` 503 saying so, nothing claimed, the process
 * up and looking again every 30 s (not the backoff of an outage: waiting cures nothing).
 */
import { afterEach, describe, expect } from 'vitest';
import { APP_FLOW, flowEnv } from '../helpers/apply-commands.js';
import { testAmqpUrl } from '../helpers/db.js';
import { PUBLISHER } from '../helpers/deliveries.js';
import { freePort, httpGet, type RunningService, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'misconf', init: 'all', flowApps: APP_FLOW });
const running: RunningService[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop('SIGKILL')));
});

const start = (argv: string[], env: Record<string, string | undefined>) => {
  const s = startService(['--json', ...argv], { env });
  running.push(s);
  return s;
};
const states = (s: RunningService) => s.lines().filter((l) => l['type'] === 'state');
const withPassword = (url: string, password: string) => {
  const u = new URL(url);
  u.password = password;
  return u.toString();
};
const withDatabase = (url: string, name: string) => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};

describe('wrong database settings are misconfigured, not an outage', () => {
  test('deliveries send --follow with a wrong FC password: misconfigured (ER_ACCESS_DENIED_ERROR), /readyz 503, no retry before 30 s, SIGTERM exit 0', async ({
    dbs,
  }) => {
    const port = await freePort();
    const relay = start(['deliveries', 'send', '--follow', '--listen', `:${port}`], {
      ...dbs.env({ FCCTL_AMQP_URL: testAmqpUrl(), FCCTL_APP_KEY: PUBLISHER.appKey, FCCTL_APP_CODE: PUBLISHER.appCode }),
      FCCTL_FC_DATABASE_URL: withPassword(dbs.fcUrl, 'not-the-password'),
    });
    const line = await relay.waitForLine(
      'misconfigured',
      (l) => l['type'] === 'state' && l['state'] === 'misconfigured',
    );
    expect(String(line['detail'])).toContain('ER_ACCESS_DENIED_ERROR');
    expect(String(line['detail'])).not.toContain('not-the-password');
    const ready = await httpGet(port, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatch(/^misconfigured: cannot connect to FC database/);
    // an outage would be tried again after 1, 2, 4 s; a misconfiguration is looked at every 30 s
    await new Promise((r) => setTimeout(r, 4000));
    expect(states(relay).map((l) => l['state'])).toEqual(['starting', 'misconfigured']);
    expect(relay.child.exitCode).toBeNull();
    const end = await relay.stop('SIGTERM');
    expect(end.code).toBe(0);
  });

  test('apply-command resolve-unknown --follow with an SH database that does not exist: misconfigured (ER_BAD_DB_ERROR)', async ({
    dbs,
    flowCenter,
  }) => {
    const port = await freePort();
    const resolver = start(['apply-command', 'resolve-unknown', '--follow', '--listen', `:${port}`], {
      ...flowEnv(dbs, flowCenter),
      FCCTL_SH_DATABASE_URL: withDatabase(dbs.shUrl, `${dbs.shName}_missing`),
    });
    const line = await resolver.waitForLine(
      'misconfigured',
      (l) => l['type'] === 'state' && l['state'] === 'misconfigured',
    );
    expect(String(line['detail'])).toContain('ER_BAD_DB_ERROR');
    expect((await httpGet(port, '/readyz')).body).toMatch(/^misconfigured: /);
    const end = await resolver.stop('SIGTERM');
    expect(end.code).toBe(0);
  });
});
