// Concurrency-test dispatcher: opens the shared journal (racing the other
// processes to create it), says `ready`, waits for `go` on stdin, then
// dispatches r0..r<count-1> in an order shuffled by <seed> (seed 0: in
// order), <inflight> at a time, printing every provider invocation and every
// outcome.
//   node concurrent-dispatcher.mjs <target json> <seed> <count> <inflight>
import { HookRuntime } from '../../dist/index.js'
import { PROFILE, emit, install, receiptId, request } from './fixture.mjs'
import { parseTarget } from './target.mjs'

const [targetArg, seedArg, countArg, inflightArg] = process.argv.slice(2)
const count = Number(countArg)
const inflight = Number(inflightArg)

// mulberry32: a small seeded generator, so a failing order can be replayed.
let seed = Number(seedArg) >>> 0
function random() {
  seed = (seed + 0x6d2b79f5) >>> 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const order = Array.from({ length: count }, (_, i) => receiptId(i))
const shuffle = seed !== 0
for (let i = shuffle ? order.length - 1 : 0; i > 0; i--) {
  const j = Math.floor(random() * (i + 1))
  ;[order[i], order[j]] = [order[j], order[i]]
}

let runtime
try {
  runtime = await HookRuntime.open({ ...parseTarget(targetArg).runtime, profile: PROFILE })
  install(runtime, (rid) => emit({ t: 'invoked', r: rid }))
} catch (e) {
  emit({ t: 'error', r: null, code: e?.code ?? null, message: String(e?.message ?? e) })
  process.exit(1)
}
emit({ t: 'ready' })

await new Promise((resolve) => {
  let seen = ''
  process.stdin.setEncoding('utf8')
  process.stdin.on('data', (chunk) => {
    seen += chunk
    if (seen.includes('go\n')) resolve()
  })
})
process.stdin.pause()

let cursor = 0
async function worker() {
  while (cursor < order.length) {
    const rid = order[cursor++]
    try {
      const out = await runtime.dispatch(request(rid))
      emit({ t: 'outcome', r: rid, admitted: out.admitted, hooks: out.hooks })
    } catch (e) {
      emit({ t: 'error', r: rid, code: e?.code ?? null, message: String(e?.message ?? e) })
    }
  }
}
await Promise.all(Array.from({ length: inflight }, worker))
await runtime.close()
emit({ t: 'done' })
