import { ISOLATION_CHECKS } from '../../src/lib/doctor/isolation/types.js';

/** The eight items of `doctor --isolation`, in the order they are reported (seed 000 §6). */
export const ISOLATION_ITEMS = [
  ISOLATION_CHECKS.vhost,
  ISOLATION_CHECKS.exchange,
  ISOLATION_CHECKS.permissions,
  ISOLATION_CHECKS.topic,
  ISOLATION_CHECKS.bindings,
  ISOLATION_CHECKS.readers,
  ISOLATION_CHECKS.queues,
  ISOLATION_CHECKS.alternateExchange,
];
