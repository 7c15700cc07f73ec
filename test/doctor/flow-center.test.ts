import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DOCTOR_LOOKUP_KEY, flowCenterCheck } from '../../src/lib/doctor/flow-center.js';
import type { LookupResult } from '../../src/lib/flow/client.js';
import { APP } from '../helpers/apply-commands.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { type FlowCenter, startFlowCenter } from '../helpers/flow-center.js';

describe('flowCenterCheck (pure): only an answer to the signed lookup passes', () => {
  const instance = {
    instanceId: 'i',
    bizType: 't',
    bizId: 'b',
    status: 10 as const,
    applyAppKey: 'k',
    submitterId: '1',
    flowGuid: 'g',
    round: null,
  };
  const table: Array<[string, LookupResult, 'ok' | 'fail', RegExp]> = [
    ['not found', { kind: 'not-found' }, 'ok', /answered \(the app key and secret are accepted\)/],
    ['found', { kind: 'found', instance }, 'ok', /answered/],
    [
      '401',
      { kind: 'http', status: 401, detail: '{"error":"SIGNATURE_INVALID"}' },
      'fail',
      /refused our credentials \(HTTP 401: .*SIGNATURE_INVALID.*\): check FCCTL_APP_KEY and FCCTL_APP_SECRET$/,
    ],
    [
      '403',
      { kind: 'http', status: 403, detail: '' },
      'fail',
      /refused our credentials \(HTTP 403\): check FCCTL_APP_KEY and FCCTL_APP_SECRET$/,
    ],
    [
      '404 (a wrong URL path)',
      { kind: 'http', status: 404, detail: 'NOT_FOUND' },
      'fail',
      /answered HTTP 404: NOT_FOUND$/,
    ],
    ['503', { kind: 'http', status: 503, detail: '' }, 'fail', /answered HTTP 503$/],
    ['malformed', { kind: 'malformed', detail: 'not strict JSON' }, 'fail', /not a lookup answer: not strict JSON/],
    [
      'timeout',
      { kind: 'timeout', detail: 'no complete answer within 5000 ms' },
      'fail',
      /^unreachable: no complete answer/,
    ],
    ['network', { kind: 'network', detail: 'ECONNREFUSED' }, 'fail', /^unreachable: ECONNREFUSED$/],
  ];
  it.each(table)('%s', (_name, answer, status, detail) => {
    const c = flowCenterCheck(answer, 'https://flow.example/');
    expect(c).toMatchObject({ check: 'flow center', status });
    expect(c.detail).toMatch(detail);
  });
});

describe('fcctl doctor: the flow center check makes one signed lookup (real stand-in)', () => {
  let fc: FlowCenter;
  beforeAll(async () => {
    fc = await startFlowCenter({ apps: { [APP.key]: APP.secret } });
  });
  afterAll(async () => {
    await fc?.stop();
  });
  beforeEach(async () => {
    await fc.clearFaults();
    await fc.clearLog();
  });
  const doctor = (env: Record<string, string>) =>
    runCli(['--json', 'doctor'], { env: { PATH: process.env['PATH'] ?? '', ...env } });
  const flowCheck = (stdout: string) =>
    jsonLines(stdout).find((l) => l['type'] === 'check' && l['check'] === 'flow center')!;

  it('the right key and secret: ok (exit 0), exactly one signed GET that the stand-in verified', async () => {
    const r = await doctor({ FCCTL_FLOW_URL: fc.url, FCCTL_APP_KEY: APP.key, FCCTL_APP_SECRET: APP.secret });
    expect(flowCheck(r.stdout)).toMatchObject({ status: 'ok' });
    expect(r.code).toBe(0);
    expect((await fc.log()).map((e) => [e.method, e.path, e.bizType, e.bizId, e.auth, e.status])).toEqual([
      ['GET', '/oapi/flow/instance', DOCTOR_LOOKUP_KEY.bizType, DOCTOR_LOOKUP_KEY.bizId, 'ok', 200],
    ]);
  });

  it('a wrong secret: fail (exit 3) naming FCCTL_APP_KEY / FCCTL_APP_SECRET — no longer "reachable (HTTP 401)"; the secret never printed', async () => {
    const r = await doctor({ FCCTL_FLOW_URL: fc.url, FCCTL_APP_KEY: APP.key, FCCTL_APP_SECRET: 'doctor-wrong-secret' });
    expect(r.code).toBe(3);
    const c = flowCheck(r.stdout);
    expect(c).toMatchObject({ status: 'fail' });
    expect(String(c['detail'])).toMatch(
      /refused our credentials \(HTTP 401: .*SIGNATURE_INVALID.*\): check FCCTL_APP_KEY and FCCTL_APP_SECRET/,
    );
    expect(r.stdout + r.stderr).not.toContain('doctor-wrong-secret');
    expect((await fc.log()).map((e) => [e.status, e.auth])).toEqual([[401, 'signature mismatch']]);
  });

  it('an app key the flow center does not know (401) and an app it forbids (403): fail', async () => {
    const unknown = await doctor({ FCCTL_FLOW_URL: fc.url, FCCTL_APP_KEY: '100777', FCCTL_APP_SECRET: APP.secret });
    expect(unknown.code).toBe(3);
    expect(String(flowCheck(unknown.stdout)['detail'])).toMatch(/HTTP 401.*FCCTL_APP_KEY/);
    await fc.faults([{ path: '/oapi/flow/instance', kind: 'status', status: 403 }]);
    const forbidden = await doctor({ FCCTL_FLOW_URL: fc.url, FCCTL_APP_KEY: APP.key, FCCTL_APP_SECRET: APP.secret });
    expect(forbidden.code).toBe(3);
    expect(String(flowCheck(forbidden.stdout)['detail'])).toMatch(/HTTP 403.*FCCTL_APP_KEY and FCCTL_APP_SECRET/);
  });

  it('a URL that is not the flow center (404 under a wrong prefix), no secret configured: fail with the reason', async () => {
    const wrongPath = await doctor({
      FCCTL_FLOW_URL: `${fc.url}/gw`,
      FCCTL_APP_KEY: APP.key,
      FCCTL_APP_SECRET: APP.secret,
    });
    expect(wrongPath.code).toBe(3);
    expect(String(flowCheck(wrongPath.stdout)['detail'])).toMatch(/answered HTTP 404/);
    const noSecret = await doctor({ FCCTL_FLOW_URL: fc.url, FCCTL_APP_KEY: APP.key });
    expect(noSecret.code).toBe(3);
    expect(flowCheck(noSecret.stdout)).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/appSecret is not configured/),
    });
  });
});
