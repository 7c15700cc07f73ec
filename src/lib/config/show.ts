import { type Config, displayValue, SETTINGS, type SettingName } from './config.js';

/** What an unset setting means, where it is not simply "none" (shown without connecting anywhere). */
const WHEN_UNSET: Partial<Record<SettingName, string>> = {
  serviceTimeZone: "the FC database's zone",
};

/** One row of `config show`. */
export interface ConfigRow {
  readonly setting: SettingName;
  readonly env: string;
  readonly value: string;
  readonly source: string;
}

/**
 * The effective configuration, one row per setting in the settings' order, secrets masked; pure.
 * @example configRows(resolveConfig({ flags: {}, env: {} }))[0] // { setting: 'fcDatabaseUrl', env: 'FCCTL_FC_DATABASE_URL', value: …, source: 'unset' }
 */
export function configRows(config: Config): ConfigRow[] {
  return (Object.keys(SETTINGS) as SettingName[]).map((name) => ({
    setting: name,
    env: SETTINGS[name].env,
    value:
      config[name].value === undefined && WHEN_UNSET[name]
        ? `(unset: ${WHEN_UNSET[name]})`
        : displayValue(name, config[name]),
    source: config[name].source,
  }));
}
