/**
 * A textfile-collector directory as node_exporter reads it (collector/textfile.go): every `*.prom`
 * file parsed on its own (a file that does not parse, or has client-side timestamps, is skipped
 * whole with an error), a family without HELP gets "Metric read from <path>", labels missing from
 * some samples of a family in one file are filled with "", then every file's families merged by
 * name and gathered by client_golang, which refuses a series collected twice ("was collected
 * before with the same name and label values", prometheus/node_exporter #753), another TYPE for a
 * name already seen, and another HELP (node_exporter #1885: the later file's samples are dropped).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseExposition, type ParsedSample, seriesKey } from '../../src/lib/metrics/parse.js';

export interface CollectedFamily {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  /** each sample with the file it came from */
  readonly samples: Array<ParsedSample & { readonly file: string }>;
}

export interface Collected {
  readonly families: ReadonlyMap<string, CollectedFamily>;
  /** what node_exporter would log (and set node_textfile_scrape_error or fail the gather for) */
  readonly errors: readonly string[];
}

/**
 * Reads every `.prom` file of `dir` (sorted by name, as ReadDir lists them).
 * @example expect(collectTextfiles(dir).errors).toEqual([])
 */
export function collectTextfiles(dir: string): Collected {
  const families = new Map<string, CollectedFamily>();
  const errors: string[] = [];
  const seen = new Set<string>();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.prom'))
    .sort()) {
    const path = join(dir, file);
    let parsed: ReturnType<typeof parseExposition>;
    try {
      parsed = parseExposition(readFileSync(path, 'utf8'));
    } catch (err) {
      errors.push(`failed to parse textfile data from ${path}: ${(err as Error).message}`);
      continue;
    }
    for (const f of parsed) {
      const help = f.help ?? `Metric read from ${path}`;
      const labelNames = new Set(f.samples.flatMap((s) => Object.keys(s.labels)));
      const into = families.get(f.name);
      if (into && into.type !== f.type) {
        errors.push(`collected metric ${f.name} from ${file} has type ${f.type} but should have ${into.type}`);
        continue;
      }
      if (into && into.help !== help) {
        errors.push(
          `collected metric ${f.name} from ${file} has help ${JSON.stringify(help)} but should have ${JSON.stringify(into.help)}`,
        );
        continue;
      }
      const family = into ?? { name: f.name, help, type: f.type, samples: [] };
      families.set(f.name, family);
      for (const s of f.samples) {
        const labels = Object.fromEntries([...labelNames].map((k) => [k, s.labels[k] ?? '']));
        const key = seriesKey(s.name, labels);
        if (seen.has(key)) {
          errors.push(`collected metric ${key} from ${file} was collected before with the same name and label values`);
          continue;
        }
        seen.add(key);
        family.samples.push({ ...s, labels, file });
      }
    }
  }
  return { families, errors };
}

/** The value of one series in a collected directory (labels as given, others absent or ""). */
export function collectedValue(
  c: Collected,
  name: string,
  labels: Readonly<Record<string, string>>,
): number | undefined {
  const key = seriesKey(name, labels);
  return c.families.get(name)?.samples.find((s) => seriesKey(name, s.labels) === key)?.value;
}

/**
 * A metrics file's text with its file label taken out, for assertions on the other labels — after
 * checking that every sample carries it: `metrics_file="<the file's base name>"`, last
 * (src/lib/metrics/textfile.ts `FILE_LABEL`). A sample without it fails the test.
 * @example expect(readProm(file)).toContain('fcctl_run_exit_code{command="deliveries send"} 0\n')
 */
export function readProm(path: string): string {
  const label = `metrics_file=${JSON.stringify(basename(path))}`;
  return readFileSync(path, 'utf8')
    .split('\n')
    .map((line) => {
      if (line === '' || line.startsWith('#')) return line;
      const without = line.replace(`{${label}} `, ' ').replace(`,${label}} `, '} ');
      if (without === line) throw new Error(`${path}: a sample without ${label}: ${line}`);
      return without;
    })
    .join('\n');
}
