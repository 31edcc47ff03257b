/**
 * The kinds of a trigger event's members, which the reducer and the store
 * check before reading them (what each value may be is the reducer's to
 * decide). Not exported from the capability's entry.
 */
export const TRIGGER_EVENT_MEMBERS = {
  intentId: 'string',
  transition: 'string',
  segmentRef: 'string',
  window: 'string',
} as const
