// A host of a hook allowed one invocation per identity, with a short
// timeout_ms, dispatching receipt r1 once.
//   node one-invocation.mjs <target json> kill|answer
// kill: the provider prints `invoked` and SIGKILLs its own process at once
// (before its queued checkpoint can commit). answer: the provider prints
// `invoked` and proposes its intent. Prints `opened` {tmp: the names in
// os.tmpdir() once the runtime is open}, then `done` {hooks} or `error`.
import { readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'

import { HookRuntime, defineHook, intent, proposed } from '../../dist/index.js'
import { KIND, POLICY_VERSION, PROFILE, REGISTRATION, emit, payloadFor, request } from './fixture.mjs'
import { parseTarget } from './target.mjs'

/** Short: past it plus the 250 ms grace an attempt is presumed lost (the spec waits that long). */
const TIMEOUT_MS = 300

const [targetArg, how] = process.argv.slice(2)
const target = parseTarget(targetArg)
try {
  const runtime = await HookRuntime.open({ ...target.runtime, profile: PROFILE })
  emit({ t: 'opened', tmp: readdirSync(tmpdir()) })
  runtime.register(
    defineHook({
      kinds: [KIND],
      registration: {
        ...REGISTRATION,
        budget: { ...REGISTRATION.budget, max_invocations_per_dispatch: 1, timeout_ms: TIMEOUT_MS },
      },
      provider: (input) => {
        emit({ t: 'invoked' })
        if (how === 'kill') {
          process.kill(process.pid, 'SIGKILL')
          return new Promise(() => {})
        }
        const rid = input.source.receipt_id
        return proposed([
          intent(input, KIND, { operation: 'mark', policyVersion: POLICY_VERSION, payload: payloadFor(rid) }),
        ])
      },
    }),
  )
  const out = await runtime.dispatch(request('r1'))
  await runtime.close()
  emit({ t: 'done', hooks: out.hooks.map((h) => ({ outcome: h.outcome, attempt: h.attempt, code: h.failureCode })) })
} catch (e) {
  emit({ t: 'error', code: e?.code ?? null, message: String(e?.message ?? e) })
  process.exitCode = 1
}
