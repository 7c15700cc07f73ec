/**
 * Reads Prometheus text exposition format (0.0.4) back: the previous `.prom` file a command adds
 * its counters to, and the tests' view of a textfile-collector directory. As strict as the Go
 * text parser node_exporter uses (`expfmt.TextParser`) on what fcctl writes: HELP or TYPE twice
 * for one name, TYPE after its samples, a bad name, label or value is an error with its line.
 */

/** One sample as read: name, labels, value. */
export interface ParsedSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A metric family as read: what HELP and TYPE said (untyped when none) and its samples in order. */
export interface ParsedFamily {
  readonly name: string;
  readonly help?: string;
  readonly type: string;
  readonly samples: ParsedSample[];
}

const TYPES = new Set(['counter', 'gauge', 'untyped', 'summary', 'histogram']);
const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*/;
// Go's strconv.ParseFloat: decimal and exponent forms, Inf/NaN in any case.
const FLOAT = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])$/;

/**
 * The identity of a series: its name and labels sorted by name (labels with an empty value count as
 * absent, as in Prometheus).
 * @example seriesKey('m', { b: '2', a: '1' }) // 'm{a="1",b="2"}'
 */
// What JSON.stringify escapes; any other string it only wraps in quotes.
const NEEDS_JSON_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

export function seriesKey(name: string, labels: Readonly<Record<string, string>>): string {
  // Called for every sample of a --all file several times over: a loop, not entries/filter/map.
  const keys = Object.keys(labels);
  if (keys.length > 1) keys.sort(); // by UTF-16 code units, as `<` compares
  let key = `${name}{`;
  let first = true;
  for (const k of keys) {
    const v = labels[k]!;
    if (v === '') continue;
    key += `${first ? '' : ','}${k}=${NEEDS_JSON_ESCAPE.test(v) ? JSON.stringify(v) : `"${v}"`}`;
    first = false;
  }
  return `${key}}`;
}

/** A parse error, with the 1-based line it was found on. */
export class ExpositionError extends Error {}

/**
 * The families of one exposition text, in the order their names first appear.
 * @throws {ExpositionError} on the first line the Go parser would refuse
 * @example parseExposition('# TYPE m gauge\nm{a="1"} 2\n')[0] // { name: 'm', type: 'gauge', samples: [{ name: 'm', labels: { a: '1' }, value: 2 }] }
 */
export function parseExposition(text: string): ParsedFamily[] {
  const families = new Map<string, { name: string; help?: string; type?: string; samples: ParsedSample[] }>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { name, samples: [] }));
    return f;
  };
  text.split('\n').forEach((raw, i) => {
    const fail = (why: string): never => {
      throw new ExpositionError(`line ${i + 1}: ${why}: ${JSON.stringify(raw)}`);
    };
    const line = raw.replace(/^[ \t]+/, '');
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      const m = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(line);
      if (!m) return; // any other comment
      const [, keyword, name = '', rest = ''] = m;
      if (NAME.exec(name)?.[0] !== name) fail(`invalid metric name in ${keyword}`);
      const f = family(name);
      if (keyword === 'HELP') {
        if (f.help !== undefined) fail(`second HELP line for metric name ${name}`);
        f.help = rest.replace(/\\(\\|n)/g, (_, c: string) => (c === 'n' ? '\n' : '\\'));
        return;
      }
      if (f.type !== undefined || f.samples.length > 0)
        fail(`second TYPE line for metric name ${name}, or TYPE reported after samples`);
      if (!TYPES.has(rest.trim())) fail(`unknown metric type ${JSON.stringify(rest.trim())}`);
      f.type = rest.trim();
      return;
    }
    const sample = parseSample(line, fail);
    family(sample.name).samples.push(sample);
  });
  return [...families.values()].map((f) => ({
    name: f.name,
    ...(f.help !== undefined ? { help: f.help } : {}),
    type: f.type ?? 'untyped',
    samples: f.samples,
  }));
}

function parseSample(line: string, fail: (why: string) => never): ParsedSample {
  const name = NAME.exec(line)?.[0] ?? fail('invalid metric name');
  let rest = line.slice(name.length);
  const labels: Record<string, string> = {};
  if (rest.startsWith('{')) {
    rest = rest.slice(1).replace(/^[ \t]+/, '');
    while (!rest.startsWith('}')) {
      const label = LABEL.exec(rest)?.[0] ?? fail('invalid label name');
      rest = rest.slice(label.length).replace(/^[ \t]+/, '');
      if (!rest.startsWith('="')) fail(`expected ="…" after label ${label}`);
      const m = /^="((?:[^"\\\n]|\\.)*)"/.exec(rest) ?? fail(`unterminated value of label ${label}`);
      if (label in labels) fail(`duplicate label ${label}`);
      labels[label] = (m[1] ?? '').replace(/\\(.)/g, (_, c: string) =>
        c === 'n' ? '\n' : c === '\\' || c === '"' ? c : fail(`invalid escape \\${c} in label ${label}`),
      );
      rest = rest.slice(m[0].length).replace(/^[ \t]+/, '');
      if (rest.startsWith(',')) rest = rest.slice(1).replace(/^[ \t]+/, '');
      else if (!rest.startsWith('}')) fail('expected , or } after a label');
    }
    rest = rest.slice(1);
  }
  if (!/^[ \t]/.test(rest)) fail('expected a space before the value');
  const [value = '', timestamp, ...extra] = rest.trim().split(/[ \t]+/);
  if (!FLOAT.test(value)) fail(`invalid value ${JSON.stringify(value)}`);
  if (timestamp !== undefined && !/^-?\d+$/.test(timestamp)) fail(`invalid timestamp ${JSON.stringify(timestamp)}`);
  if (extra.length > 0) fail('text after the timestamp');
  const lower = value.toLowerCase().replace(/^\+/, '');
  const v = lower.endsWith('nan')
    ? NaN
    : lower.includes('inf')
      ? lower.startsWith('-')
        ? -Infinity
        : Infinity
      : Number(value);
  return { name, labels, value: v };
}
