import { describe, expect, it } from 'vitest';
import { isDbMisconfiguration, isOutage, isReadOnly } from '../../src/lib/db/outage.js';
import { failureKind } from '../../src/lib/service/decide.js';

const err = (code: string, message = 'x', cause?: unknown) =>
  Object.assign(new Error(message), { code }, cause === undefined ? {} : { cause });

// issue 35 §5: a managed failover demotes the writer; its refusals are outages, waited out
describe('isOutage: a read-only server (failover)', () => {
  it.each([
    [
      '1290 naming --read-only',
      err(
        'ER_OPTION_PREVENTS_STATEMENT',
        'The MariaDB server is running with the --read-only option so it cannot execute this statement',
      ),
      true,
    ],
    [
      '1290 naming --super-read-only (MySQL 8)',
      err(
        'ER_OPTION_PREVENTS_STATEMENT',
        'The MySQL server is running with the --super-read-only option so it cannot execute this statement',
      ),
      true,
    ],
    [
      '1290 naming another option',
      err(
        'ER_OPTION_PREVENTS_STATEMENT',
        'The MySQL server is running with the --secure-file-priv option so it cannot execute this statement',
      ),
      false,
    ],
    ['1836 ER_READ_ONLY_MODE', err('ER_READ_ONLY_MODE', 'Running in read-only mode'), true],
    [
      '1792 in a read-only transaction',
      err('ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION', 'Cannot execute statement in a READ ONLY transaction.'),
      true,
    ],
    ['1874 InnoDB read-only', err('ER_INNODB_READ_ONLY', 'InnoDB is in read only mode.'), true],
    ['a read-only refusal as a cause', new Error('outcome write', { cause: err('ER_READ_ONLY_MODE') }), true],
    ['a connection lost at the switch', err('PROTOCOL_CONNECTION_LOST'), true],
    ['a duplicate key: the row’s fault', err('ER_DUP_ENTRY', 'Duplicate entry'), false],
    ['no code', new Error('read-only'), false],
  ])('%s → %s', (_name, e, outage) => {
    expect(isOutage(e)).toBe(outage);
    expect(isReadOnly(e)).toBe(outage && !/connection lost/.test(_name));
    // a read-only server is never a misconfiguration: waiting cures it
    expect(isDbMisconfiguration(e)).toBe(false);
    if (outage) expect(failureKind(e)).toBe('outage');
  });
});
