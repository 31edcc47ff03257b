// A host whose provider ends its process at its first instruction, before
// the invocation's queued checkpoint can commit: by SIGKILL, or by
// process.exit(). It prints `invoked` first (one synchronous write).
//   node instant-killer.mjs <target json> dispatch|recover sigkill|exit
import { HookRuntime, defineHook } from '../../dist/index.js'
import { KIND, PROFILE, REGISTRATION, emit, request } from './fixture.mjs'
import { parseTarget } from './target.mjs'

const [targetArg, mode, how] = process.argv.slice(2)
const target = parseTarget(targetArg)
try {
  const runtime = await HookRuntime.open({ ...target.runtime, profile: PROFILE })
  runtime.defineIntentKind(KIND)
  runtime.register(
    defineHook({
      kinds: [KIND],
      // The default timeout (10 s) is far longer than a restart: an attempt
      // must not be presumed still running just because it is recent.
      registration: { ...REGISTRATION, budget: { ...REGISTRATION.budget, max_invocations_per_dispatch: 2 } },
      provider: () => {
        emit({ t: 'invoked' })
        if (how === 'exit') process.exit(0)
        process.kill(process.pid, 'SIGKILL')
        return new Promise(() => {})
      },
    }),
  )
  const out = mode === 'dispatch' ? (await runtime.dispatch(request('r1'))).hooks : (await runtime.recover()).outcomes
  await runtime.close()
  emit({ t: 'done', hooks: out.map((h) => ({ outcome: h.outcome, attempt: h.attempt, code: h.failureCode })) })
} catch (e) {
  emit({ t: 'error', code: e?.code ?? null, message: String(e?.message ?? e) })
  process.exitCode = 1
}
