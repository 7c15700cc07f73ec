import { type Command, InvalidArgumentError } from '@commander-js/extra-typings';
import { consumerArg, pathArg, schoolArg, uuidArg } from '../options.js';

/**
 * An answer uuid as pasted from a ticket: surrounding spaces and one pair of braces (`{…}`, the
 * GUID form) taken off — neither can be part of a 36-character uuid column — then a UUID, any case.
 * @example pastedUuidArg(' {8C1F3A52-0D6E-4B7A-9C2E-5F4D3B2A1C0E} ') // '8C1F3A52-0D6E-4B7A-9C2E-5F4D3B2A1C0E'
 */
export const pastedUuidArg = (value: string) => {
  const trimmed = value.trim();
  const bare = /^\{.*\}$/s.test(trimmed) ? trimmed.slice(1, -1).trim() : trimmed;
  return uuidArg(bare);
};

/** A value of at most `max` characters, not empty and without control characters (a key column's width). */
export const textArg = (max: number) => (value: string) => {
  if (value.length === 0 || value.length > max || /[\u0000-\u001f\u007f]/.test(value))
    throw new InvalidArgumentError(`expected 1–${max} characters without control characters`);
  return value;
};

/** The flags the answer and event verbs share: which consumer and school, where the reconcile run is. */
export function filtered<Args extends unknown[]>(cmd: Command<Args>) {
  return cmd
    .option(
      '--consumer <key>',
      'only this consumer app key (known to application_info, or to a grant or outbox row of the answer)',
      consumerArg,
    )
    .option('--school <id>', 'only this consumer school', schoolArg)
    .option(
      '--reconcile-dir <dir>',
      "a reconcile run's directory (an --all run's DIR, or one pair's): the answer's category is read from its report.csv",
      pathArg,
    );
}

type Filter = { consumer?: string; school?: string; reconcileDir?: string };
export const filterOf = (o: Filter) => ({
  ...(o.consumer !== undefined ? { consumer: o.consumer } : {}),
  ...(o.school !== undefined ? { schId: o.school } : {}),
  ...(o.reconcileDir !== undefined ? { reconcileDir: o.reconcileDir } : {}),
});
