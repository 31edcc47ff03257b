// Crash-test dispatcher: dispatches r<start>, r<start+1>, ... forever with
// several dispatches in flight, and writes one `resolved` line (synchronously,
// to fd 1) as soon as each dispatch promise resolves. The parent kills it
// with SIGKILL at a random moment.
//   node crash-dispatcher.mjs <target json> <start> <inflight>
import { HookRuntime } from '../../lib/index.js'
import { PROFILE, emit, install, receiptId, request } from './fixture.mjs'
import { parseTarget } from './target.mjs'

const [targetArg, startArg, inflightArg] = process.argv.slice(2)
const target = parseTarget(targetArg)
let next = Number(startArg)
const inflight = Number(inflightArg)

const runtime = await HookRuntime.open({ ...target.runtime, profile: PROFILE })
install(runtime)
emit({ t: 'ready' })

async function worker() {
  for (;;) {
    const rid = receiptId(next++)
    emit({ t: 'started', r: rid })
    try {
      const out = await runtime.dispatch(request(rid))
      const hook = out.hooks[0]
      emit({
        t: 'resolved',
        r: rid,
        admitted: out.admitted,
        hooks: out.hooks.length,
        d: hook?.dispatchId,
        o: hook?.outcome,
        receipt: hook?.receipt ?? null,
      })
    } catch (e) {
      emit({ t: 'error', r: rid, code: e?.code ?? null, message: String(e?.message ?? e) })
    }
  }
}

await Promise.all(Array.from({ length: inflight }, worker))
