// A host whose provider kills it: the provider waits until its invocation's
// checkpoint is in the journal (so the attempt has reached it), prints
// `invoked`, then SIGKILLs its own process, as an out-of-memory or a native
// fault would. Without a crash nothing else is printed but the report.
//   node self-killer.mjs <journal> dispatch|recover <attempt the call is>
import { HookRuntime, defineHook } from '../../dist/index.js'
import { KIND, PROFILE, REGISTRATION, emit, request } from './fixture.mjs'

const INVOCATIONS = 3
/** Short, so a crashed attempt is soon presumed lost (timeout + 250 ms grace). */
const TIMEOUT_MS = 300

const [journalPath, mode, attempt] = process.argv.slice(2)
try {
  const runtime = await HookRuntime.open({ journal: journalPath, profile: PROFILE, synchronous: 'full' })
  runtime.defineIntentKind(KIND)
  runtime.register(
    defineHook({
      kinds: [KIND],
      registration: {
        ...REGISTRATION,
        budget: { ...REGISTRATION.budget, max_invocations_per_dispatch: INVOCATIONS, timeout_ms: TIMEOUT_MS },
      },
      provider: async (input) => {
        const before = Date.now()
        let row = await runtime.journal.getDispatch(input.dispatch_id)
        // The checkpoint is queued just before the call; it commits within a group commit.
        while (Date.now() - before < 10_000 && !(row && row.attempts >= Number(attempt))) {
          await new Promise((r) => setTimeout(r, 2))
          row = await runtime.journal.getDispatch(input.dispatch_id)
        }
        emit({ t: 'invoked', attempts: row?.attempts ?? null })
        process.kill(process.pid, 'SIGKILL')
        return new Promise(() => {})
      },
    }),
  )
  emit({ t: 'ready' })
  const out = mode === 'dispatch' ? (await runtime.dispatch(request('r1'))).hooks : (await runtime.recover()).outcomes
  await runtime.close()
  emit({ t: 'done', hooks: out.map((h) => ({ outcome: h.outcome, attempt: h.attempt, code: h.failureCode })) })
} catch (e) {
  emit({ t: 'error', code: e?.code ?? null, message: String(e?.message ?? e) })
  process.exitCode = 1
}
