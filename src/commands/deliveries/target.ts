import { InvalidArgumentError } from 'commander';

/**
 * `--consumer KEY`: a consumer credential key as stored (1–64 characters, no whitespace or
 * control characters). Not checked as a routing key here: a row with a bad key is still listable.
 * @example .requiredOption('--consumer <key>', 'consumer app key', consumerArg)
 */
export function consumerArg(value: string): string {
  // eslint-disable-next-line no-control-regex
  if (value.length === 0 || value.length > 64 || /[\s\u0000-\u001f\u007f]/.test(value)) {
    throw new InvalidArgumentError('expected a consumer app key of 1–64 characters without spaces');
  }
  return value;
}

/**
 * `--consumer KEY` where the key must make a routing key (SPEC §4): {@link consumerArg} and none of
 * `.` `*` `#`. For commands that queue a message: a row of such a key can never be sent.
 * @example .requiredOption('--consumer <key>', 'consumer app key', routableConsumerArg)
 */
export function routableConsumerArg(value: string): string {
  consumerArg(value);
  if (/[.*#]/.test(value)) throw new InvalidArgumentError('expected a consumer app key that can make a routing key: none of . * # (SPEC §4)');
  return value;
}

/**
 * `--school ID`: a positive integer that fits a BIGINT, kept as decimal text.
 * @example schoolArg('5') // '5'
 */
export function schoolArg(value: string): string {
  if (!/^[1-9]\d{0,18}$/.test(value) || BigInt(value) > 9223372036854775807n) throw new InvalidArgumentError('expected a positive whole number');
  return value;
}
