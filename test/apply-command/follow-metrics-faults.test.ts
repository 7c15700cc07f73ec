/**
 * A follow resolver's connection state set (issue 36 §4; review of the metrics change), on a real
 * `bin/fcctl` process with its SH database behind a TCP proxy: started while paused, the SH
 * database (the pause switch is read through it) is connected and the flow center closed; the SH
 * database out during the pause is lost, and back, connected again (one reconnect) while still paused.
 */
import { beforeEach, describe, expect } from 'vitest';
import { APP_FLOW, clearFlowCenter, type Env, flowEnv } from '../helpers/apply-commands.js';
import { runCli } from '../helpers/cli.js';
import type { FlowCenter } from '../helpers/flow-center.js';
import { TcpProxy, viaProxy } from '../helpers/proxy.js';
import { freePort, httpGet, type RunningService, startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'rmfault', init: 'sh', flowApps: APP_FLOW });
let fc: FlowCenter, env: Env, admin: import('mysql2/promise').Connection, shName: string;
const running: RunningService[] = [];
test.beforeAll(
  ({ dbs, flowCenter }) =>
    void ([fc, env, admin, shName] = [flowCenter, flowEnv(dbs, flowCenter), dbs.admin, dbs.shName]),
);
beforeEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop('SIGKILL')));
  await clearFlowCenter(fc);
  await admin.query(`DELETE FROM \`${shName}\`.fcctl_pause`);
});

const isState = (state: string) => (l: Record<string, unknown>) => l['type'] === 'state' && l['state'] === state;
const sample = (body: string, name: string, labels = '') =>
  Number(new RegExp(`^${name}${labels ? `\\{${labels}\\}` : ''} (\\S+)$`, 'm').exec(body)?.[1] ?? Number.NaN);
const LABEL = 'command="apply-command resolve-unknown"';

describe('apply-command resolve-unknown --follow: connection states under a pause and an outage (issue 36 §4)', () => {
  test('started with the SH database down: it is lost, the flow center closed (nothing asked of it meanwhile, never no series)', async () => {
    const shUrl = new URL(env['FCCTL_SH_DATABASE_URL']!);
    const proxy = new TcpProxy(shUrl.hostname, Number(shUrl.port || 3306));
    const proxyPort = await proxy.start();
    try {
      proxy.refuse(true);
      const port = await freePort();
      const r = startService(['--json', 'apply-command', 'resolve-unknown', '--follow', '--listen', `:${port}`], {
        env: { ...env, FCCTL_SH_DATABASE_URL: viaProxy(shUrl.toString(), proxyPort) },
      });
      running.push(r);
      await r.waitForLine('outage', isState('outage'));
      const body = (await httpGet(port, '/metrics')).body;
      const states = (target: string) =>
        ['connected', 'closed', 'lost'].map((state) =>
          sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="${state}"`),
        );
      expect({ sh: states('sh_database'), flow: states('flow_center') }).toEqual({ sh: [0, 0, 1], flow: [0, 1, 0] });
      proxy.refuse(false);
      await r.waitForLine('running', isState('running'), 60_000);
      expect((await r.stop()).code).toBe(0);
    } finally {
      await proxy.stop();
    }
  }, 120_000);

  test('started while paused: the SH database connected, the flow center closed; the SH database back during the pause reads connected, one reconnect', async () => {
    const shUrl = new URL(env['FCCTL_SH_DATABASE_URL']!);
    const proxy = new TcpProxy(shUrl.hostname, Number(shUrl.port || 3306));
    const proxyPort = await proxy.start();
    try {
      expect((await runCli(['pause', 'apply-command resolve-unknown', '--reason', 'test'], { env })).code).toBe(0);
      const port = await freePort();
      const r = startService(['--json', 'apply-command', 'resolve-unknown', '--follow', '--listen', `:${port}`], {
        env: { ...env, FCCTL_SH_DATABASE_URL: viaProxy(shUrl.toString(), proxyPort) },
      });
      running.push(r);
      await r.waitForLine('paused', isState('paused'));
      const read = async () => {
        const body = (await httpGet(port, '/metrics')).body;
        const of = (target: string) => ({
          connected: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="connected"`),
          closed: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="closed"`),
          lost: sample(body, 'fcctl_service_connection_state', `${LABEL},target="${target}",state="lost"`),
          reconnects: sample(body, 'fcctl_service_reconnects_total', `${LABEL},target="${target}"`),
        });
        return { sh: of('sh_database'), flow: of('flow_center') };
      };
      const closed = { connected: 0, closed: 1, lost: 0, reconnects: 0 };
      expect(await read()).toEqual({ sh: { connected: 1, closed: 0, lost: 0, reconnects: 0 }, flow: closed });
      proxy.refuse(true);
      proxy.cut();
      await waitFor('the SH database lost', async () => (await read()).sh.lost === 1, 30_000, 100);
      proxy.refuse(false);
      await waitFor('the SH database back', async () => (await read()).sh.lost === 0, 60_000, 100);
      expect(await read()).toEqual({ sh: { connected: 1, closed: 0, lost: 0, reconnects: 1 }, flow: closed });
      expect(r.lines().filter(isState('running'))).toEqual([]);
      expect((await r.stop()).code).toBe(0);
    } finally {
      await proxy.stop();
    }
  }, 120_000);
});
