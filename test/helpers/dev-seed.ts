import { expect } from 'vitest';
import { DEFAULT_PUBLISHER, defaultConsumerKeys, planSeed, type SeedPlan } from '../../src/lib/dev/seed.js';
import { runCli } from './cli.js';

/**
 * What `fcctl dev seed --seed S --answers N --schools K` writes (three consumers, the grant mix, no
 * faults, no snapshot padding): the plan a test compares the databases with.
 * @example devSeedPlan(4, 120).answers.length // 120
 */
export function devSeedPlan(seed: number, answers: number, schools = 1): SeedPlan {
  return planSeed({
    seed,
    answers,
    consumerKeys: defaultConsumerKeys(3, DEFAULT_PUBLISHER.appKey),
    schools,
    snapshotBytes: 0,
    publisher: DEFAULT_PUBLISHER,
    grantMix: true,
    includeFaults: false,
  });
}

/** `db init --side all --dev`, then `dev seed` as {@link devSeedPlan} plans it; both must exit 0. */
export async function seedDevDatabases(
  env: Record<string, string | undefined>,
  seed: number,
  answers: number,
  schools = 1,
): Promise<void> {
  const init = await runCli(['db', 'init', '--side', 'all', '--dev'], { env });
  expect(init.code, init.stderr).toBe(0);
  const seeded = await runCli(
    ['--json', 'dev', 'seed', '--answers', String(answers), '--schools', String(schools), '--seed', String(seed)],
    { env },
  );
  expect(seeded.code, seeded.stderr).toBe(0);
}
