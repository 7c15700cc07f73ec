import { describe, expect, it } from 'vitest';
import { resolveConfig, SETTINGS } from '../../src/lib/config/config.js';
import { configRows } from '../../src/lib/config/show.js';

describe('config show rows (pure)', () => {
  const rowsOf = (env: Record<string, string | undefined>) =>
    Object.fromEntries(configRows(resolveConfig({ flags: {}, env })).map((r) => [r.setting, r]));
  it("one row per setting, in the settings' order", () => {
    expect(configRows(resolveConfig({ flags: {}, env: {} })).map((r) => r.setting)).toEqual(Object.keys(SETTINGS));
  });
  it.each([
    { name: 'unset', env: {}, setting: 'appKey', want: { value: '(unset)', source: 'unset', env: 'FCCTL_APP_KEY' } },
    {
      name: 'unset, with what it means',
      env: {},
      setting: 'serviceTimeZone',
      want: { value: "(unset: the FC database's zone)", source: 'unset' },
    },
    {
      name: 'from the environment',
      env: { FCCTL_APP_KEY: '100021' },
      setting: 'appKey',
      want: { value: '100021', source: 'env' },
    },
    {
      name: 'a secret is masked',
      env: { FCCTL_APP_SECRET: 's3cret' },
      setting: 'appSecret',
      want: { value: '***', source: 'env' },
    },
  ])('$name', ({ env, setting, want }) => {
    expect(rowsOf(env)[setting]).toMatchObject(want);
  });
});
