import { describe, expect, it } from 'vitest';
import { InFlight } from '../../src/lib/batch/in-flight.js';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

/** next() keeps waiting until `wake` runs, and is woken by it. */
async function expectNextWokenBy(f: InFlight, wake: () => void): Promise<void> {
  let woke = false;
  const waiting = f.next().then(() => (woke = true));
  await Promise.resolve();
  expect(woke).toBe(false);
  wake();
  await waiting;
  expect(woke).toBe(true);
}

describe('InFlight', () => {
  it('next() resolves when any one task settles, size follows, all() waits for the rest', async () => {
    const f = new InFlight();
    const a = deferred();
    const b = deferred();
    f.add(a.promise);
    f.add(b.promise);
    expect(f.size).toBe(2);
    await expectNextWokenBy(f, () => b.resolve());
    expect(f.size).toBe(1);
    let all = false;
    const done = f.all().then(() => (all = true));
    await new Promise((r) => setTimeout(r, 5));
    expect(all).toBe(false);
    a.resolve();
    await done;
    expect(f.size).toBe(0);
  });

  it('next() on nothing resolves at once; two waiters are both woken by one settle', async () => {
    const f = new InFlight();
    await f.next();
    const t = deferred();
    f.add(t.promise);
    const woken: number[] = [];
    const w1 = f.next().then(() => woken.push(1));
    const w2 = f.next().then(() => woken.push(2));
    t.resolve();
    await Promise.all([w1, w2]);
    expect(woken.sort()).toEqual([1, 2]);
  });

  it('notify() wakes the waiter without a task settling; with no waiter it is a no-op', async () => {
    const f = new InFlight();
    const t = deferred();
    f.add(t.promise);
    f.notify();
    await expectNextWokenBy(f, () => f.notify());
    expect(f.size).toBe(1);
    t.resolve();
    await f.all();
    expect(f.size).toBe(0);
  });

  it('all() also waits for tasks added while it waits', async () => {
    const f = new InFlight();
    const first = deferred();
    const second = deferred();
    f.add(first.promise.then(() => f.add(second.promise)));
    let all = false;
    const done = f.all().then(() => (all = true));
    first.resolve();
    await new Promise((r) => setTimeout(r, 5));
    expect(all).toBe(false);
    second.resolve();
    await done;
    expect(all).toBe(true);
  });
});
