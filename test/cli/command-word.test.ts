import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { commandWord } from '../../src/main.js';

// The word start-up reads to load one command's modules (src/main.ts): it must be the word
// commander dispatches on, whatever global options come first.
const program = new Command('fcctl')
  .version('1.0.0', '-V, --version')
  .option('--config <file>')
  .option('--json')
  .option('--progress-interval <s>')
  .option('--maybe [value]');

describe('commandWord', () => {
  it.each([
    [['deliveries', 'send'], 'deliveries'],
    [['--json', 'deliveries', 'send'], 'deliveries'],
    [['--config', 'deliveries', 'canon'], 'canon'], // "deliveries" is the config file's name
    [['--config=c.json', 'canon', 'hash'], 'canon'],
    [['--progress-interval', '5', '--json', 'reconcile', 'run'], 'reconcile'],
    [['--maybe', 'x', 'db'], 'db'],
    [['--maybe', '--json', 'db'], 'db'],
    [['--unknown', 'db'], 'db'],
    [['-V'], undefined],
    [[], undefined],
    [['--', 'doctor'], 'doctor'],
    [['-', 'doctor'], '-'],
  ] as const)('%j → %s', (argv, word) => {
    expect(commandWord(program, argv)).toBe(word);
  });
});
