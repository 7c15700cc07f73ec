import { describe, expect, it } from 'vitest';
import { Turns } from '../../src/lib/batch/turns.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('Turns: one holder at a time, in the order handed out', () => {
  it('each turn starts after every earlier one is done, whatever order they are done in', async () => {
    const turns = new Turns();
    const [a, b, c] = [turns.next(), turns.next(), turns.next()];
    const started: string[] = [];
    void a.ready.then(() => started.push('a'));
    void b.ready.then(() => started.push('b'));
    void c.ready.then(() => started.push('c'));
    await tick();
    expect(started).toEqual(['a']);
    // c ended early (an error before its turn): it still waits for a and b
    c.done();
    await tick();
    expect(started).toEqual(['a']);
    a.done();
    await tick();
    expect(started).toEqual(['a', 'b']);
    b.done();
    b.done();
    await tick();
    expect(started).toEqual(['a', 'b', 'c']);
    const d = turns.next();
    let dReady = false;
    void d.ready.then(() => (dReady = true));
    await tick();
    expect(dReady).toBe(true);
  });
});
