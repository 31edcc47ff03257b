// ValidationResult narrows on `ok`: `value` only when ok, `violations` only when not.
import {
  IntentKinds,
  validateRegistration,
  type PostWritebackHookRegistration,
  type Rule,
  type Violation,
} from '../../lib/index.js'

declare const doc: unknown
const verdict = validateRegistration(doc, new IntentKinds([]))

// @ts-expect-error value is not there before narrowing
export const early = verdict.value

export function use(): string {
  if (verdict.ok) {
    const registration: PostWritebackHookRegistration = verdict.value
    // @ts-expect-error no violations on an accepted verdict
    void verdict.violations
    return registration.hook_id
  } else {
    const violations: Violation[] = verdict.violations
    const rules: Rule[] = violations.map((v) => v.rule)
    // @ts-expect-error no value on a rejected verdict
    void verdict.value
    // @ts-expect-error a rule is one of the stable codes, not any string
    const made_up: Rule = 'made_up_rule'
    return `${rules.join()} ${made_up}`
  }
}
