import { describe, expect, it } from 'vitest';
import { serverVersion, versionProblem } from '../../src/lib/db/version.js';

describe('the server version gate (issue 35 §4)', () => {
  it.each([
    ['8.0.21', null],
    ['8.0.36', null],
    ['8.4.3', null],
    ['9.1.0', null],
    ['10.6.0-MariaDB', null],
    ['10.11.6-MariaDB-0+deb12u1', null],
    ['5.5.5-10.11.6-MariaDB-log', null],
    ['11.4.2-MariaDB', null],
    ['8.0.20', 'MySQL 8.0.20 is older than fcctl supports (MySQL 8.0.21+, MariaDB 10.6+)'],
    ['5.7.44-log', 'MySQL 5.7.44 is older than fcctl supports (MySQL 8.0.21+, MariaDB 10.6+)'],
    ['10.5.23-MariaDB', 'MariaDB 10.5.23 is older than fcctl supports (MySQL 8.0.21+, MariaDB 10.6+)'],
    ['5.5.5-10.4.1-MariaDB', 'MariaDB 10.4.1 is older than fcctl supports (MySQL 8.0.21+, MariaDB 10.6+)'],
    ['banana', "the server's version 'banana' is not one fcctl recognises (MySQL 8.0.21+, MariaDB 10.6+)"],
  ])('%s → %s', (text, problem) => {
    expect(versionProblem(text)).toBe(problem);
  });

  it('reads the flavour from the text, the numbers from its start', () => {
    expect(serverVersion('8.0.36-28.1 Percona')).toEqual({ flavour: 'mysql', major: 8, minor: 0, patch: 36 });
    expect(serverVersion('10.11.6-MariaDB')).toEqual({ flavour: 'mariadb', major: 10, minor: 11, patch: 6 });
  });
});
