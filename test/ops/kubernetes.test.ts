import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Deployment } from 'kubernetes-models/apps/v1';
import { CronJob } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseAmqpUrl } from '../../src/lib/amqp/url.js';

// Issue 27 §4: docs/kubernetes/ is validated offline against the Kubernetes API schema
// (kubernetes-models: the OpenAPI schema compiled to validators; no cluster here), and the rules
// that matter for fcctl are asserted on top: probes, grace period, non-root, secrets as files.

const DIR = fileURLToPath(new URL('../../docs/kubernetes/', import.meta.url));
const FCCTL = fileURLToPath(new URL('../../bin/fcctl', import.meta.url));
/** --drain-seconds' default (the service-mode contract, issue 27 §1). */
const DRAIN_DEFAULT_SECONDS = 30;
/** The flags service mode adds (issue 27 contract): checked by name here, not against --help. */
const SERVICE_FLAGS = ['--follow', '--listen', '--poll-interval', '--drain-seconds', '--heartbeat-seconds'];
/** The settings that hold a secret (a password in a URL, the app secret): only ever through *_FILE. */
const SECRET_SETTINGS = [
  'FCCTL_FC_DATABASE_URL',
  'FCCTL_SH_DATABASE_URL',
  'FCCTL_AMQP_URL',
  'FCCTL_AMQP_MANAGEMENT_URL',
  'FCCTL_REPLICA_URL',
  'FCCTL_APP_SECRET',
];

type Obj = Record<string, any>;
interface Validator {
  validate(): void;
}
const MODELS: Record<string, new (data: any) => Validator> = {
  'apps/v1 Deployment': Deployment,
  'batch/v1 CronJob': CronJob,
  'policy/v1 PodDisruptionBudget': PodDisruptionBudget,
  'v1 Secret': Secret,
  'v1 ConfigMap': ConfigMap,
  'v1 Service': Service,
};

/**
 * Every document of a manifest file checked against the schema of its kind: the problems, one line
 * each (none: valid). YAML 1.1, as kubectl reads it (`yes` is a boolean, `0440` octal there).
 */
function manifestErrors(file: string, text: string): string[] {
  const errors: string[] = [];
  for (const [i, doc] of parseAllDocuments(text, { version: '1.1', uniqueKeys: true }).entries()) {
    const where = `${file} document ${i + 1}`;
    for (const e of [...doc.errors, ...doc.warnings]) errors.push(`${where}: ${e.message.split('\n')[0]}`);
    const data = doc.toJS() as Obj | null;
    if (data === null || typeof data !== 'object' || Array.isArray(data)) {
      errors.push(`${where}: not a mapping`);
      continue;
    }
    const Model = MODELS[`${data.apiVersion} ${data.kind}`];
    if (!Model) {
      errors.push(`${where}: no schema for ${data.apiVersion} ${data.kind}`);
      continue;
    }
    if (typeof data.metadata?.name !== 'string') errors.push(`${where}: metadata.name missing`);
    try {
      new Model(data).validate();
    } catch (err) {
      errors.push(`${where}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  return errors;
}

const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort();
const text = (f: string) => readFileSync(join(DIR, f), 'utf8');
const docs: Obj[] = files.flatMap((f) => parseAllDocuments(text(f), { version: '1.1' }).map((d) => d.toJS() as Obj));
const find = (kind: string, name: string): Obj => {
  const d = docs.find((x) => x.kind === kind && x.metadata?.name === name);
  if (!d) throw new Error(`no ${kind} ${name} in docs/kubernetes`);
  return d;
};
const relay = find('Deployment', 'fcctl-deliveries-relay');
const resolver = find('Deployment', 'fcctl-apply-resolver');
const cron = find('CronJob', 'fcctl-reconcile');
const scan = find('CronJob', 'fcctl-deliveries-scan');
const pushgateway = find('Deployment', 'fcctl-pushgateway');
const secret = find('Secret', 'fcctl-secrets');
const config = find('ConfigMap', 'fcctl-config');
/** Every pod template: the Deployments' and the CronJobs'. */
const pods: [string, Obj][] = docs.flatMap((d): [string, Obj][] =>
  d.kind === 'Deployment'
    ? [[d.metadata.name, d.spec.template.spec]]
    : d.kind === 'CronJob'
      ? [[d.metadata.name, d.spec.jobTemplate.spec.template.spec]]
      : [],
);

/** The value after `flag` in a container's args. */
const argValue = (args: string[], flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
/** A probe's port as a number (a named port resolved through the container's ports). */
function probePort(c: Obj, probe: Obj): number {
  const port = probe.httpGet.port;
  return typeof port === 'number' ? port : c.ports.find((p: Obj) => p.name === port).containerPort;
}

/**
 * A container's environment as the pod would have it, with the Secret example's values written as
 * files under `root` (each *_FILE path mapped into it) and configMapKeyRef read from the example.
 */
function containerEnv(pod: Obj, c: Obj, root: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) {
    if (e.valueFrom?.configMapKeyRef) {
      const ref = e.valueFrom.configMapKeyRef;
      expect(ref.name).toBe(config.metadata.name);
      if (config.data[ref.key] !== undefined) env[e.name] = config.data[ref.key];
      else expect(ref.optional, `${e.name}: key ${ref.key} not in the ConfigMap`).toBe(true);
    } else if (e.name.endsWith('_FILE')) {
      const mount = c.volumeMounts.find((m: Obj) => e.value.startsWith(`${m.mountPath}/`));
      expect(mount, `${e.name}=${e.value} is on no volume mount`).toBeDefined();
      expect(mount.readOnly, `${e.name}: the secret mount is read-only`).toBe(true);
      const volume = pod.volumes.find((v: Obj) => v.name === mount.name);
      expect(volume.secret?.secretName, `${e.name}: read from the Secret`).toBe(secret.metadata.name);
      const file = e.value.slice(mount.mountPath.length + 1);
      const key = volume.secret.items ? volume.secret.items.find((i: Obj) => i.path === file)?.key : file;
      expect(secret.stringData[key], `${e.name}: the Secret has no key for ${file}`).toBeDefined();
      const local = join(root, `${c.name}-${key}`);
      writeFileSync(local, `${secret.stringData[key]}\n`);
      env[e.name] = local;
    } else {
      env[e.name] = e.value;
    }
  }
  return env;
}

/** `fcctl --json config show` with that environment: each setting's source. */
function configSources(env: Record<string, string>): Record<string, string> {
  const r = spawnSync(process.execPath, [FCCTL, '--json', 'config', 'show'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
  });
  expect(r.status, r.stderr).toBe(0);
  const rows = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Obj)
    .filter((l) => l.type === 'row');
  return Object.fromEntries(rows.map((l) => [l.setting, l.source]));
}

/** The `--flag`s fcctl's help lists for a command, and the global ones. */
function helpFlags(command: string[]): Set<string> {
  const out = (args: string[]) => spawnSync(process.execPath, [FCCTL, ...args, '--help'], { encoding: 'utf8' }).stdout;
  return new Set([...`${out(command)}\n${out([])}`.matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]));
}

describe('docs/kubernetes manifests', () => {
  it('every document is valid against the Kubernetes API schema of its kind', () => {
    expect(files).toEqual([
      'apply-resolver.yaml',
      'deliveries-relay.yaml',
      'deliveries-scan-cronjob.yaml',
      'pushgateway.yaml',
      'reconcile-cronjob.yaml',
      'secret.example.yaml',
    ]);
    expect(files.flatMap((f) => manifestErrors(f, text(f)))).toEqual([]);
    expect(docs.map((d) => d.kind).sort()).toEqual([
      'ConfigMap',
      'CronJob',
      'CronJob',
      'Deployment',
      'Deployment',
      'Deployment',
      'PodDisruptionBudget',
      'Secret',
      'Service',
    ]);
  });

  it('the check fails on broken manifests (it is not vacuous)', () => {
    const good = text('deliveries-relay.yaml');
    const broken = (from: string, to: string) => {
      expect(good).toContain(from);
      return manifestErrors('broken.yaml', good.replace(from, to));
    };
    // a port as a string, a probe without its port, a required field gone, a kind with no schema
    expect(broken('containerPort: 9464', 'containerPort: "9464"').join('\n')).toMatch(/containerPort must be integer/);
    expect(broken('httpGet: { path: /readyz, port: metrics }', 'httpGet: { path: /readyz }').join('\n')).toMatch(
      /httpGet must have required property port/,
    );
    expect(
      broken(
        '  selector:\n    matchLabels:\n      app.kubernetes.io/name: fcctl-deliveries-relay\n  strategy:',
        '  strategy:',
      ).join('\n'),
    ).toMatch(/must have required property selector/);
    expect(broken('kind: PodDisruptionBudget', 'kind: PodDisruptionBudgett')).toEqual([
      'broken.yaml document 2: no schema for policy/v1 PodDisruptionBudgett',
    ]);
    expect(broken('replicas: 2', 'replicas: 2\n  replicas: 3').join('\n')).toMatch(/unique/i);
    const cronText = text('reconcile-cronjob.yaml');
    expect(
      manifestErrors('broken.yaml', cronText.replace('completionMode: Indexed', 'completionMode: [Indexed]')).join(
        '\n',
      ),
    ).toMatch(/completionMode must be string/);
  });

  it('the relay: 2 replicas, --follow listening on 0.0.0.0:9464, liveness on /healthz and readiness on /readyz of that port', () => {
    expect(relay.spec.replicas).toBe(2);
    for (const [d, port, command] of [
      [relay, 9464, ['deliveries', 'send']],
      [resolver, 9465, ['apply-command', 'resolve-unknown']],
    ] as const) {
      const [c, ...others] = d.spec.template.spec.containers as Obj[];
      expect(others).toEqual([]);
      expect(c!.args.slice(0, 3)).toEqual([...command, '--follow']);
      expect(argValue(c!.args, '--listen')).toBe(`0.0.0.0:${port}`);
      expect(c!.args).toContain('--json');
      expect(c!.args).not.toContain('--dry-run');
      expect(c!.ports.map((p: Obj) => p.containerPort)).toEqual([port]);
      expect(c!.livenessProbe.httpGet.path).toBe('/healthz');
      expect(c!.readinessProbe.httpGet.path).toBe('/readyz');
      for (const probe of [c!.livenessProbe, c!.readinessProbe, c!.startupProbe])
        expect(probePort(c!, probe)).toBe(port);
      // every other flag is one fcctl has (the service flags are new: checked by name)
      const known = helpFlags([...command]);
      for (const flag of c!.args.filter((a: string) => a.startsWith('--')))
        expect(known.has(flag) || SERVICE_FLAGS.includes(flag), `${flag} of ${command.join(' ')}`).toBe(true);
      expect(d.spec.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': d.metadata.name });
      expect(d.spec.template.metadata.labels).toMatchObject(d.spec.selector.matchLabels);
    }
    const pdb = find('PodDisruptionBudget', 'fcctl-deliveries-relay');
    expect(pdb.spec.selector).toEqual(relay.spec.selector);
    expect(pdb.spec.minAvailable).toBeLessThan(relay.spec.replicas);
  });

  it('the grace period before SIGKILL is above the drain', () => {
    for (const d of [relay, resolver]) {
      const args = d.spec.template.spec.containers[0].args as string[];
      const drain = argValue(args, '--drain-seconds');
      const drainSeconds = drain === undefined ? DRAIN_DEFAULT_SECONDS : Number(drain);
      expect(d.spec.template.spec.terminationGracePeriodSeconds, d.metadata.name).toBeGreaterThanOrEqual(
        drainSeconds + 10,
      );
    }
  });

  it('every pod runs as non-root, on a read-only root filesystem, without privilege escalation', () => {
    expect(pods.map(([n]) => n).sort()).toEqual([
      'fcctl-apply-resolver',
      'fcctl-deliveries-relay',
      'fcctl-deliveries-scan',
      'fcctl-pushgateway',
      'fcctl-reconcile',
    ]);
    for (const [name, pod] of pods) {
      expect(pod.securityContext.runAsNonRoot, name).toBe(true);
      expect(pod.securityContext.runAsUser, name).toBeGreaterThan(0);
      expect(pod.automountServiceAccountToken, name).toBe(false);
      for (const c of [...pod.containers, ...(pod.initContainers ?? [])] as Obj[]) {
        expect(c.securityContext.runAsNonRoot ?? pod.securityContext.runAsNonRoot, name).toBe(true);
        expect(c.securityContext.runAsUser ?? pod.securityContext.runAsUser, name).not.toBe(0);
        expect(c.securityContext.readOnlyRootFilesystem, name).toBe(true);
        expect(c.securityContext.allowPrivilegeEscalation, name).toBe(false);
        expect(c.securityContext.privileged ?? false, name).toBe(false);
        expect(c.securityContext.capabilities.drop, name).toEqual(['ALL']);
        // fcctl's image, or a pinned tag of the two helpers (the metrics push, the Pushgateway)
        if (c.image !== relay.spec.template.spec.containers[0].image)
          expect(c.image, name).toMatch(/^docker\.io\/(curlimages\/curl|prom\/pushgateway):v?\d+\.\d+\.\d+$/);
      }
    }
  });

  it('secrets reach the pods only as files of the Secret, through the *_FILE variables, and the example holds placeholders only', () => {
    expect(secret.data).toBeUndefined();
    for (const [key, value] of Object.entries(secret.stringData as Record<string, string>))
      expect(value, key).toContain('CHANGE-ME');
    // nothing secret in the ConfigMap
    for (const key of Object.keys(config.data)) expect(SECRET_SETTINGS, key).not.toContain(key.replace(/_FILE$/, ''));
    for (const [name, pod] of pods) {
      for (const v of (pod.volumes ?? []).filter((x: Obj) => x.secret)) expect(v.secret.defaultMode, name).toBe(0o440);
      for (const c of pod.containers as Obj[]) {
        expect(c.envFrom, name).toBeUndefined();
        for (const e of (c.env ?? []) as Obj[]) {
          expect(e.valueFrom?.secretKeyRef, `${name} ${e.name}: a secret in the environment`).toBeUndefined();
          expect(SECRET_SETTINGS, `${name}: ${e.name} as a literal`).not.toContain(e.name);
          // no literal that looks like a credential (a URL with a user or password)
          if (typeof e.value === 'string') expect(e.value, `${name} ${e.name}`).not.toMatch(/:\/\/[^/]*@/);
        }
      }
    }
  });

  it("fcctl reads each workload's settings from that environment: the secrets from the files, the rest from the ConfigMap", () => {
    const root = mkdtempSync(join(tmpdir(), 'fcctl-k8s-'));
    try {
      // what each command needs (README: "Relaying deliveries", "Resolving apply commands", "reconcile run --all")
      const needs: [string, Record<string, string>][] = [
        ['fcctl-deliveries-relay', { fcDatabaseUrl: 'env-file', amqpUrl: 'env-file', appKey: 'env', appCode: 'env' }],
        ['fcctl-apply-resolver', { shDatabaseUrl: 'env-file', appSecret: 'env-file', flowUrl: 'env', appKey: 'env' }],
        ['fcctl-reconcile', { fcDatabaseUrl: 'env-file', shDatabaseUrl: 'env-file' }],
        ['fcctl-deliveries-scan', { fcDatabaseUrl: 'env-file' }],
      ];
      for (const [name, need] of needs) {
        const pod = pods.find(([n]) => n === name)![1];
        const sources = configSources(containerEnv(pod, pod.containers[0], root));
        expect(Object.fromEntries(Object.keys(need).map((k) => [k, sources[k]])), name).toEqual(need);
        // and nothing secret it does not need
        for (const s of ['fcDatabaseUrl', 'shDatabaseUrl', 'amqpUrl', 'appSecret'].filter((k) => !(k in need)))
          expect(sources[s], `${name} ${s}`).toBe('unset');
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("the relay reaches RabbitMQ over mutual TLS: amqp-url is amqps, and each file it names is mounted read-only from the Secret's keys", () => {
    const settings = parseAmqpUrl(secret.stringData['amqp-url']);
    expect([settings.tls, settings.verify]).toEqual([true, 'verify_peer']);
    const pod = relay.spec.template.spec;
    const c = pod.containers[0] as Obj;
    const named = [settings.cacertfile, settings.certfile, settings.keyfile];
    expect(named.every((f) => f !== undefined)).toBe(true);
    for (const path of named as string[]) {
      const mount = c.volumeMounts.find((m: Obj) => path.startsWith(`${m.mountPath}/`));
      expect(mount?.readOnly, `${path} on a read-only mount`).toBe(true);
      const volume = pod.volumes.find((v: Obj) => v.name === mount.name);
      expect(volume.secret?.secretName, path).toBe(secret.metadata.name);
      const key = volume.secret.items.find((i: Obj) => i.path === path.slice(mount.mountPath.length + 1))?.key;
      expect(secret.stringData[key], `${path}: a key of the Secret`).toMatch(/^-----BEGIN [A-Z ]+-----\n/);
    }
  });

  it('the nightly CronJob: reconcile run --all as an Indexed Job of 3 pods sharing the default run id, in a set time zone', () => {
    const job = cron.spec.jobTemplate.spec;
    expect([job.completionMode, job.completions, job.parallelism]).toEqual(['Indexed', 3, 3]);
    expect(cron.spec.concurrencyPolicy).toBe('Forbid');
    expect(cron.spec.schedule).toMatch(/^\d+ \d+ \* \* \*$/);
    // a zone the runtime knows (an unknown one throws a RangeError)
    expect(new Intl.DateTimeFormat('en', { timeZone: cron.spec.timeZone }).resolvedOptions().timeZone).toBe(
      cron.spec.timeZone,
    );
    const pod = job.template.spec;
    expect(['OnFailure', 'Never']).toContain(pod.restartPolicy);
    const c = pod.containers[0] as Obj;
    expect(c.args.slice(0, 3)).toEqual(['reconcile', 'run', '--all']);
    expect(argValue(c.args, '--consumer')).toMatch(/^\S+$/);
    // the pods agree on the run only when none names its own
    expect(c.args).not.toContain('--run-id');
    expect(c.args.join(' ')).not.toMatch(/JOB_COMPLETION_INDEX|\$\(/);
    const known = helpFlags(['reconcile', 'run']);
    for (const flag of c.args.filter((a: string) => a.startsWith('--'))) expect(known.has(flag), flag).toBe(true);
    // --out-dir on a volume of the pod's own (README: local to each host, never shared)
    const out = c.volumeMounts.find((m: Obj) => m.mountPath === argValue(c.args, '--out-dir'));
    expect(out, '--out-dir is a volume mount').toBeDefined();
    expect(out.readOnly ?? false).toBe(false);
    const volume = pod.volumes.find((v: Obj) => v.name === out.name);
    expect(volume.emptyDir ?? volume.ephemeral, 'a per-pod volume (emptyDir), not a shared claim').toBeDefined();
    expect(text('reconcile-cronjob.yaml')).toMatch(
      /--out-dir is an emptyDir, one per pod, not a shared PersistentVolumeClaim/,
    );
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(60);
  });

  it('the PodDisruptionBudget lets an unready relay be evicted: a drain during an outage (both relays unready) is not blocked', () => {
    const pdb = find('PodDisruptionBudget', 'fcctl-deliveries-relay');
    expect(pdb.spec.minAvailable).toBe(1);
    expect(pdb.spec.unhealthyPodEvictionPolicy).toBe('AlwaysAllow');
    // the schema knows the field and its values: a misspelt value is refused
    const bad = text('deliveries-relay.yaml').replace(
      'unhealthyPodEvictionPolicy: AlwaysAllow',
      'unhealthyPodEvictionPolicy: Always',
    );
    expect(manifestErrors('broken.yaml', bad).join('\n')).toMatch(
      /unhealthyPodEvictionPolicy must be equal to one of the allowed values/,
    );
  });

  it('every Job fails at once on exit 2 (usage) and 4 (safety), retries exit 3 (environment), and does not count an eviction', () => {
    for (const cj of [cron, scan]) {
      const job = cj.spec.jobTemplate.spec;
      const pod = job.template.spec;
      const name = cj.metadata.name as string;
      // podFailurePolicy needs restartPolicy Never (the API refuses it otherwise)
      expect(pod.restartPolicy, name).toBe('Never');
      const rules = job.podFailurePolicy.rules as Obj[];
      const fcctl = pod.containers[0].name;
      /** The action the first matching rule takes for an exit code of the fcctl container (none: Count). */
      const action = (code: number) =>
        rules.find(
          (r) =>
            r.onExitCodes &&
            (r.onExitCodes.containerName ?? fcctl) === fcctl &&
            (r.onExitCodes.operator === 'In') === r.onExitCodes.values.includes(code),
        )?.action ?? 'Count';
      expect([0, 1, 2, 3, 4].map(action), name).toEqual(['Count', 'Count', 'FailJob', 'Count', 'FailJob']);
      expect(
        rules.some((r) => r.action === 'Ignore' && r.onPodConditions?.some((c: Obj) => c.type === 'DisruptionTarget')),
        name,
      ).toBe(true);
    }
    // the nightly Job retries an outage (exit 3) within its backoff limit
    expect(cron.spec.jobTemplate.spec.backoffLimit).toBeGreaterThanOrEqual(3);
    // the schema checks the rule's shape
    const bad = text('reconcile-cronjob.yaml').replace('operator: In', 'operator: Among');
    expect(manifestErrors('broken.yaml', bad).join('\n')).toMatch(
      /operator must be equal to one of the allowed values/,
    );
  });

  it('every container requests and limits ephemeral storage, the limit above the disk emptyDirs it mounts; every emptyDir has a size limit', () => {
    const bytes = (q: string) => {
      const m = /^(\d+)(Ki|Mi|Gi|Ti)?$/.exec(q);
      if (!m) throw new Error(`unreadable quantity ${q}`);
      return Number(m[1]) * 1024 ** ['', 'Ki', 'Mi', 'Gi', 'Ti'].indexOf(m[2] ?? '');
    };
    expect(bytes('20Gi')).toBe(20 * 1024 ** 3);
    for (const [name, pod] of pods) {
      for (const v of (pod.volumes ?? []) as Obj[])
        if (v.emptyDir) expect(v.emptyDir.sizeLimit, `${name} volume ${v.name}`).toBeDefined();
      for (const c of [...pod.containers, ...(pod.initContainers ?? [])] as Obj[]) {
        const where = `${name} ${c.name}`;
        const request = c.resources?.requests?.['ephemeral-storage'];
        const limit = c.resources?.limits?.['ephemeral-storage'];
        expect(request, where).toBeDefined();
        expect(limit, where).toBeDefined();
        expect(bytes(request), where).toBeLessThanOrEqual(bytes(limit));
        const onDisk = ((c.volumeMounts ?? []) as Obj[])
          .map((m) => (pod.volumes as Obj[]).find((v) => v.name === m.name) as Obj)
          .filter((v) => v?.emptyDir && v.emptyDir.medium !== 'Memory')
          .reduce((sum, v) => sum + bytes(v.emptyDir.sizeLimit), 0);
        expect(bytes(limit), where).toBeGreaterThan(onDisk);
      }
    }
    const out = (cron.spec.jobTemplate.spec.template.spec.volumes as Obj[]).find((v) => v.name === 'out') as Obj;
    expect(out.emptyDir.sizeLimit).toBe('20Gi');
  });

  it('a deliveries scan CronJob every minute, one at a time, never retried (the next minute is the retry)', () => {
    expect(scan.spec.schedule).toBe('* * * * *');
    expect(scan.spec.concurrencyPolicy).toBe('Forbid');
    const job = scan.spec.jobTemplate.spec;
    expect(job.backoffLimit).toBe(0);
    expect(job.activeDeadlineSeconds).toBeLessThan(60);
    const c = job.template.spec.containers[0] as Obj;
    expect(c.args.slice(0, 2)).toEqual(['deliveries', 'scan']);
    const known = helpFlags(['deliveries', 'scan']);
    for (const flag of c.args.filter((a: string) => a.startsWith('--'))) expect(known.has(flag), flag).toBe(true);
  });

  it("the batch CronJobs' metrics files reach the Pushgateway: a native sidecar mounts the file's volume and pushes to its Service", () => {
    const service = find('Service', 'fcctl-pushgateway');
    expect(service.spec.selector).toEqual(pushgateway.spec.selector.matchLabels);
    const port = service.spec.ports[0].port;
    for (const cj of [cron, scan]) {
      const pod = cj.spec.jobTemplate.spec.template.spec;
      const name = cj.metadata.name as string;
      const c = pod.containers[0] as Obj;
      const file = argValue(c.args, '--metrics-file');
      expect(file, `${name}: --metrics-file`).toMatch(/\.prom$/);
      const mount = (c.volumeMounts as Obj[]).find((m) => file!.startsWith(`${m.mountPath}/`)) as Obj;
      expect(mount, `${name}: the metrics file on a volume`).toBeDefined();
      // first the fetch of the pod's group (a plain init container, done before fcctl starts: fcctl's
      // previous file), then the push sidecar
      const [fetch, push, ...others] = pod.initContainers as Obj[];
      expect(others).toEqual([]);
      expect(fetch!.name, name).toBe('fetch-metrics');
      expect(fetch!.restartPolicy, name).toBeUndefined();
      const fetchMount = (fetch!.volumeMounts as Obj[]).find((m) => m.name === mount.name);
      expect(fetchMount?.mountPath, name).toBe(mount.mountPath);
      expect(fetchMount?.readOnly, name).toBeUndefined();
      // a native sidecar: stopped by the kubelet once fcctl has exited, which is when it pushes
      expect(push!.restartPolicy, name).toBe('Always');
      expect((push!.volumeMounts as Obj[]).find((m) => m.name === mount.name)?.mountPath, name).toBe(mount.mountPath);
      const env = Object.fromEntries((push!.env as Obj[]).map((e) => [e.name, e.value]));
      expect(env['METRICS_FILE'], name).toBe(file);
      expect(env['PUSHGATEWAY_URL'], name).toBe(`http://${service.metadata.name}:${port}`);
      expect(push!.args[0], name).toContain(`/metrics/job/${name}/instance/${name}`);
    }
    // the reconcile pods push one group per index, not per pod: the next night's pod replaces it
    expect(cron.spec.jobTemplate.spec.template.spec.initContainers[1].args[0]).toContain(
      '/instance/fcctl-reconcile-$JOB_COMPLETION_INDEX"',
    );
    expect(cron.spec.jobTemplate.spec.template.spec.initContainers[0].args[0]).toContain(
      'inst="fcctl-reconcile-$JOB_COMPLETION_INDEX"',
    );
    // the choice is written down where the SRE looks
    expect(text('pushgateway.yaml')).toMatch(/Chosen: /);
    expect(readFileSync(fileURLToPath(new URL('../../docs/operations.md', import.meta.url)), 'utf8')).toContain(
      'Metrics on Kubernetes',
    );
  });

  it("the CronJob's comment says what a late pod does as docs/commands/reconcile.md does: it joins, and exits with the run's verdict", () => {
    const comment = text('reconcile-cronjob.yaml')
      .split('\n')
      .filter((l) => /^\s*#/.test(l))
      .map((l) => l.replace(/^\s*#\s?/, ''))
      .join(' ');
    const doc = readFileSync(
      fileURLToPath(new URL('../../docs/commands/reconcile.md', import.meta.url)),
      'utf8',
    ).replace(/\s+/g, ' ');
    // what fcctl does (test/ops/cron.test.ts runs it: a second --all within 30 minutes joins,
    // runs nothing, exit 0): the same words in both
    for (const claim of ["exits with that run's verdict", 'within 30 minutes', 'begins a new run'])
      expect(comment, claim).toContain(claim);
    expect(doc).toContain("exits with that run's verdict");
    expect(doc).toMatch(/less than 30 minutes ago/);
    expect(doc).toContain('begins a new run');
    expect(comment).not.toMatch(/finds the run complete and exits 1/);
  });
});
