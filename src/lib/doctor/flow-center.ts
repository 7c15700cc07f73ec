/**
 * `doctor`'s flow-center check: one signed lookup, so a wrong app key or secret is found before a
 * cron run meets it. An answer proves the URL and the credentials; a 401/403 names the settings.
 */
import type { LookupResult } from '../flow/client.js';
import type { CheckResult } from './decide.js';

/** The business key doctor looks up: no command has it, so the answer is `{"found":false}`. */
export const DOCTOR_LOOKUP_KEY = { bizType: 'fcctl-doctor', bizId: 'credentials-check' } as const;

/**
 * The check line for the answer to the signed lookup; pure.
 * @example flowCenterCheck({ kind: 'http', status: 401, detail: '' }, 'https://flow/') // { status: 'fail', … FCCTL_APP_SECRET … }
 */
export function flowCenterCheck(answer: LookupResult, baseUrl: string): CheckResult {
  const at = `signed lookup at ${baseUrl}`;
  switch (answer.kind) {
    case 'found':
    case 'not-found':
      return { check: 'flow center', status: 'ok', detail: `${at} answered (the app key and secret are accepted)` };
    case 'http':
      if (answer.status === 401 || answer.status === 403) {
        return {
          check: 'flow center',
          status: 'fail',
          detail: `${at} refused our credentials (HTTP ${answer.status}${answer.detail ? `: ${answer.detail}` : ''}): check FCCTL_APP_KEY and FCCTL_APP_SECRET`,
        };
      }
      return {
        check: 'flow center',
        status: 'fail',
        detail: `${at} answered HTTP ${answer.status}${answer.detail ? `: ${answer.detail}` : ''}`,
      };
    case 'malformed':
      return {
        check: 'flow center',
        status: 'fail',
        detail: `${at} answered a body that is not a lookup answer: ${answer.detail}`,
      };
    case 'timeout':
    case 'network':
      return { check: 'flow center', status: 'fail', detail: `unreachable: ${answer.detail}` };
  }
}
