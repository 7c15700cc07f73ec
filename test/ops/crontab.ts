/**
 * Reading a crontab as cron(8) does, for the tests that run docs/cron/fcctl.crontab as written.
 * crontab(5): a line is blank, a `#` comment, an environment setting `NAME=value`, or five time
 * fields and a command; in the command an unescaped `%` ends the command (the rest, `%` read as
 * newlines, is its stdin) and `\%` is a literal `%`.
 */
export interface CronJob {
  readonly schedule: string;
  readonly command: string;
  readonly stdin: string;
  /** the line as written in the file */
  readonly line: string;
}

export interface Crontab {
  readonly env: Record<string, string>;
  readonly jobs: readonly CronJob[];
}

const SETTING = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/;
const JOB = /^((?:\S+\s+){4}\S+)\s+(.+)$/;

/** The settings and jobs of a crontab's text; a line that is neither is an error. */
export function parseCrontab(text: string): Crontab {
  const env: Record<string, string> = {};
  const jobs: CronJob[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const setting = SETTING.exec(line);
    // A job's first field is the minute (digits, `*`, `@…`), never a name: no ambiguity.
    if (setting) {
      env[setting[1]!] = unquote(setting[2]!);
      continue;
    }
    const job = JOB.exec(line);
    if (!job) throw new Error(`not a crontab line: ${line}`);
    jobs.push({ schedule: job[1]!, ...cronCommand(job[2]!), line });
  }
  return { env, jobs };
}

/** cron's `%` handling: the command up to the first unescaped `%`, the rest as stdin lines. */
export function cronCommand(text: string): { command: string; stdin: string } {
  let command = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && text[i + 1] === '%') {
      command += '%';
      i++;
    } else if (c === '%') {
      return { command, stdin: text.slice(i + 1).replaceAll('%', '\n') };
    } else {
      command += c;
    }
  }
  return { command, stdin: '' };
}

/** A setting's value may be quoted, as cron allows (`NAME="a b"`). */
function unquote(value: string): string {
  const v = value.trim();
  if (v.length >= 2 && (v[0] === '"' || v[0] === "'") && v.at(-1) === v[0]) return v.slice(1, -1);
  return v;
}

/**
 * The environment file lines the crontab's header documents (`#   KEY=VALUE` under `Example:`),
 * in order.
 */
export function documentedEnvExample(text: string): Array<[string, string]> {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => /^#\s*Example:\s*$/.test(l));
  if (start < 0) throw new Error('the crontab documents no example environment file');
  const out: Array<[string, string]> = [];
  for (const l of lines.slice(start + 1)) {
    const m = /^#\s+([A-Z][A-Z0-9_]*)=(\S*)\s*$/.exec(l);
    if (!m) break;
    out.push([m[1]!, m[2]!]);
  }
  return out;
}

/** Every occurrence of each `from` path replaced by its `to` (longest first, so prefixes do not clash). */
export function substitutePaths(text: string, paths: Record<string, string>): string {
  let out = text;
  for (const from of Object.keys(paths).sort((a, b) => b.length - a.length)) out = out.replaceAll(from, paths[from]!);
  return out;
}
