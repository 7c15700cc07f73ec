import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Issue 27 §4: the Containerfile cannot be built here (no container engine). What can be checked:
// every path it copies exists (in the build context, or from the build stage), and its runtime
// stage — replayed in a temp folder: its COPYs and its production-only `npm ci` — runs fcctl
// without any dev dependency.

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CONTAINERFILE = join(REPO, 'Containerfile');

interface Instruction {
  readonly op: string;
  readonly args: string;
}
interface Stage {
  readonly from: string;
  readonly name: string | null;
  readonly steps: Instruction[];
}

/** The Containerfile's stages and their instructions (comments dropped, `\` continuations joined). */
function parseContainerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  for (const line of lines) {
    const [, op, args] = /^(\S+)\s+(.*)$/.exec(line) ?? [];
    if (!op || args === undefined) throw new Error(`unreadable line: ${line}`);
    if (op.toUpperCase() === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args)!;
      stages.push({ from: m[1]!, name: m[2] ?? null, steps: [] });
    } else if (op.toUpperCase() !== 'ARG' || stages.length > 0) {
      if (stages.length === 0) throw new Error(`${op} before FROM`);
      stages.at(-1)!.steps.push({ op: op.toUpperCase(), args });
    }
  }
  return stages;
}

/** A COPY's options, sources and destination (shell form). */
function copyOf(args: string): { from: string | null; sources: string[]; dest: string } {
  const words = args.split(/\s+/);
  const options = words.filter((w) => w.startsWith('--'));
  const paths = words.filter((w) => !w.startsWith('--'));
  const from = options.find((o) => o.startsWith('--from='))?.slice('--from='.length) ?? null;
  return { from, sources: paths.slice(0, -1), dest: paths.at(-1)! };
}

/** The WORKDIR in effect at each step of a stage. */
function withWorkdir(stage: Stage): (Instruction & { workdir: string })[] {
  let workdir = '/';
  return stage.steps.map((s) => {
    if (s.op === 'WORKDIR') workdir = posix.resolve(workdir, s.args);
    return { ...s, workdir };
  });
}

/** Whether the ignore file (`*` then `!name` exceptions, last match wins) lets `path` into the context. */
function inContext(ignore: string, path: string): boolean {
  let included = true;
  for (const raw of ignore
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))) {
    const negate = raw.startsWith('!');
    const pattern = negate ? raw.slice(1) : raw;
    const top = path.split('/')[0];
    if (pattern === '*' || pattern === path || pattern === top) included = negate;
  }
  return included;
}

const text = readFileSync(CONTAINERFILE, 'utf8');
const stages = parseContainerfile(text);
const build = stages.find((s) => s.name === 'build')!;
const runtime = stages.at(-1)!;

describe('Containerfile', () => {
  it('is multi-stage: npm ci and the build in a build stage, a production-only install in the runtime, a non-root user, bin/fcctl as the entrypoint', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(build, 'a stage named build').toBeDefined();
    expect(runtime).not.toBe(build);
    const runs = (s: Stage) => s.steps.filter((i) => i.op === 'RUN').map((i) => i.args);
    expect(runs(build).some((r) => /^npm ci\b/.test(r) && !r.includes('--omit'))).toBe(true);
    expect(runs(build)).toContain('npm run build');
    expect(runs(runtime).some((r) => /^npm ci --omit=dev\b/.test(r))).toBe(true);
    // nothing of the build context copied wholesale into the runtime (no dev files, no secrets)
    for (const c of runtime.steps.filter((i) => i.op === 'COPY').map((i) => copyOf(i.args)))
      expect(c.sources).not.toContain('.');
    const users = runtime.steps.filter((i) => i.op === 'USER').map((i) => i.args);
    expect(users).toHaveLength(1);
    // numeric, so that Kubernetes' runAsNonRoot can check it; never root
    expect(users[0]).toMatch(/^[1-9]\d*(:[1-9]\d*)?$/);
    const runAs = Number(
      /runAsUser: (\d+)/.exec(readFileSync(join(REPO, 'docs/kubernetes/deliveries-relay.yaml'), 'utf8'))![1],
    );
    expect(users[0]!.split(':')[0]).toBe(String(runAs));
    const entry = runtime.steps.filter((i) => i.op === 'ENTRYPOINT');
    expect(entry).toHaveLength(1);
    const workdir = withWorkdir(runtime).find((s) => s.op === 'ENTRYPOINT')!.workdir;
    expect(JSON.parse(entry[0]!.args)).toEqual([posix.join(workdir, 'bin/fcctl')]);
  });

  it('every path it copies exists: from the build context (and not ignored there) or from the build stage', () => {
    const ignores = ['.containerignore', '.dockerignore'].filter((f) => existsSync(join(REPO, f)));
    expect(ignores.length).toBeGreaterThan(0);
    let copies = 0;
    for (const stage of stages) {
      for (const step of withWorkdir(stage).filter((s) => s.op === 'COPY')) {
        const c = copyOf(step.args);
        for (const src of c.sources) {
          copies++;
          if (c.from === null) {
            expect(existsSync(join(REPO, src)), `COPY ${src}: not in the repository`).toBe(true);
            for (const f of ignores)
              expect(inContext(readFileSync(join(REPO, f), 'utf8'), src), `COPY ${src}: excluded by ${f}`).toBe(true);
          } else {
            expect(c.from).toBe('build');
            // a build-stage path: what the build writes there (tsconfig's outDir, under its WORKDIR)
            const buildDir = withWorkdir(build).find((s) => s.op === 'RUN' && s.args === 'npm run build')!.workdir;
            const rel = posix.relative(buildDir, src);
            const outDir = (
              JSON.parse(readFileSync(join(REPO, 'tsconfig.json'), 'utf8')) as { compilerOptions: { outDir: string } }
            ).compilerOptions.outDir;
            expect(rel).toBe(outDir);
            expect(
              existsSync(join(REPO, rel, 'main.js')),
              `${rel}/main.js: build first (npx tsc -p tsconfig.json)`,
            ).toBe(true);
          }
        }
      }
    }
    expect(copies).toBeGreaterThanOrEqual(7);
    // the build stage copies what the build reads (tsconfig includes src)
    const buildSources = build.steps.filter((s) => s.op === 'COPY').flatMap((s) => copyOf(s.args).sources);
    expect(buildSources).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', 'tsconfig.json', 'src']));
    // the runtime has what the package ships (package.json "files") and the manifest
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { files: string[] };
    const runtimeDests = runtime.steps
      .filter((s) => s.op === 'COPY')
      .flatMap((s) => {
        const c = copyOf(s.args);
        return c.sources.map((src) =>
          c.sources.length === 1 && !c.dest.endsWith('/') ? posix.normalize(c.dest) : posix.basename(src),
        );
      });
    expect(runtimeDests).toEqual(expect.arrayContaining([...pkg.files, 'package.json', 'package-lock.json']));
  });

  it('the ignore-file check is not vacuous', () => {
    const ignore = readFileSync(join(REPO, '.containerignore'), 'utf8');
    expect(inContext(ignore, 'src')).toBe(true);
    expect(inContext(ignore, 'node_modules')).toBe(false);
    expect(inContext(ignore, 'test')).toBe(false);
    expect(inContext(`${ignore}\nsrc\n`, 'src')).toBe(false);
  });

  it('the runtime stage replayed in a temp folder (its COPYs, its production-only npm ci) runs fcctl --version and deliveries send --help', {
    timeout: 90_000,
  }, () => {
    const root = mkdtempSync(join(tmpdir(), 'fcctl-image-'));
    try {
      // Node would find packages in any parent folder's node_modules: none may hold dev dependencies.
      for (let d = root; d !== dirname(d); d = dirname(d))
        expect(existsSync(join(dirname(d), 'node_modules')), `${dirname(d)}/node_modules`).toBe(false);
      const started = Date.now();
      for (const step of withWorkdir(runtime)) {
        const at = join(root, step.workdir);
        if (step.op === 'COPY') {
          const c = copyOf(step.args);
          for (const src of c.sources) {
            const from =
              c.from === null
                ? join(REPO, src)
                : join(
                    REPO,
                    posix.relative(
                      withWorkdir(build).find((s) => s.op === 'RUN' && s.args === 'npm run build')!.workdir,
                      src,
                    ),
                  );
            const dest =
              c.dest.endsWith('/') || c.sources.length > 1 ? join(at, c.dest, posix.basename(src)) : join(at, c.dest);
            cpSync(from, dest, { recursive: true });
          }
        } else if (step.op === 'RUN') {
          for (const cmd of step.args.split('&&').map((s) => s.trim())) {
            // the image's cache cleanup is not replayed here (it would empty this user's npm cache)
            if (cmd === 'npm cache clean --force') continue;
            expect(cmd).toMatch(/^npm ci --omit=dev --ignore-scripts\b/);
            const r = spawnSync('sh', ['-c', cmd], {
              cwd: at,
              encoding: 'utf8',
              timeout: 60_000,
              env: { ...process.env, NODE_ENV: 'production' },
            });
            expect(r.status, `${cmd}: ${r.stderr}`).toBe(0);
          }
        }
      }
      const app = join(root, withWorkdir(runtime).find((s) => s.op === 'ENTRYPOINT')!.workdir);
      // no dev-only package was installed (the lockfile marks them "dev": a dev dependency that a
      // production one also needs, such as mysql2's @types/node, is not one), every production one was
      const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as {
        packages: Record<string, { dev?: boolean }>;
      };
      const devOnly = Object.entries(lock.packages)
        .filter(([path, p]) => path !== '' && p.dev === true)
        .map(([path]) => path);
      expect(devOnly).toEqual(
        expect.arrayContaining(['node_modules/typescript', 'node_modules/vitest', 'node_modules/kubernetes-models']),
      );
      for (const path of devOnly) expect(existsSync(join(app, path)), path).toBe(false);
      const pkg = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as {
        dependencies: Record<string, string>;
      };
      for (const dep of Object.keys(pkg.dependencies))
        expect(statSync(join(app, 'node_modules', dep)).isDirectory(), dep).toBe(true);
      const fcctl = (...args: string[]) =>
        spawnSync(process.execPath, [join(app, 'bin/fcctl'), ...args], {
          cwd: app,
          encoding: 'utf8',
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'production' },
          timeout: 20_000,
        });
      const version = fcctl('--version');
      expect(version.status, version.stderr).toBe(0);
      expect(version.stdout.trim()).toBe(
        (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version,
      );
      for (const command of [
        ['deliveries', 'send'],
        ['apply-command', 'resolve-unknown'],
        ['reconcile', 'run'],
      ]) {
        const help = fcctl(...command, '--help');
        expect(help.status, `${command.join(' ')} --help: ${help.stderr}`).toBe(0);
        expect(help.stdout).toContain(`Usage: fcctl ${command.join(' ')}`);
      }
      // every compiled module loads with the production dependencies alone
      const load = spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `
        import { readdirSync } from 'node:fs';
        const files = readdirSync('dist', { recursive: true }).filter((f) => f.endsWith('.js') && f !== 'main.js');
        for (const f of files) await import('./dist/' + f);
        console.log(files.length);`,
        ],
        { cwd: app, encoding: 'utf8', timeout: 30_000 },
      );
      expect(load.status, load.stderr).toBe(0);
      expect(Number(load.stdout.trim())).toBeGreaterThan(50);
      expect(Date.now() - started).toBeLessThan(60_000);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
