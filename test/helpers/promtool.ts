/**
 * promtool (Debian's `prometheus` package, installed by `scripts/services.sh up`). Missing, the
 * tests that need it fail with one clear line, as the service tests do without their servers:
 * a check that silently skipped would let broken rules or metrics through CI.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** The promtool to run: `FCCTL_PROMTOOL`, else the first on PATH, else /usr/bin/promtool. */
export function promtoolPath(): string {
  const given = process.env['FCCTL_PROMTOOL'];
  if (given) return given;
  const found = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).stdout.trim();
  if (found) return found;
  if (existsSync('/usr/bin/promtool')) return '/usr/bin/promtool';
  throw new Error(
    "promtool is not installed: run `bash scripts/services.sh up` (installs Debian's prometheus package), or set FCCTL_PROMTOOL",
  );
}

/** Runs promtool with `args` (and `input` on stdin): its exit code and output. */
export function promtool(
  args: readonly string[],
  input?: string,
): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(promtoolPath(), args, {
    encoding: 'utf8',
    timeout: 60_000,
    ...(input !== undefined ? { input } : {}),
  });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
