// Dispatcher of the consumers test: dispatches r0, r1, ... one every
// <pauseMs> until "stop" arrives on stdin, printing each outcome, then
// closes and prints {t:'finished', n}.
//   node paced-dispatcher.mjs <target json> <pauseMs>
import { HookRuntime } from '../../dist/index.js'
import { PROFILE, emit, install, receiptId, request } from './fixture.mjs'
import { parseTarget } from './target.mjs'

const [targetArg, pauseMs] = process.argv.slice(2)
let stopping = false
let seen = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (chunk) => {
  seen += chunk
  if (seen.includes('stop\n')) stopping = true
})
const runtime = await HookRuntime.open({ ...parseTarget(targetArg).runtime, profile: PROFILE })
install(runtime)
emit({ t: 'ready' })
let n = 0
while (!stopping) {
  const rid = receiptId(n++)
  try {
    const out = await runtime.dispatch(request(rid))
    emit({ t: 'outcome', r: rid, recorded: out.hooks[0]?.outcome === 'recorded' })
  } catch (e) {
    emit({ t: 'error', r: rid, code: e?.code ?? String(e) })
  }
  await new Promise((resolve) => setTimeout(resolve, Number(pauseMs)))
}
await runtime.close()
emit({ t: 'finished', n })
process.stdin.pause()
