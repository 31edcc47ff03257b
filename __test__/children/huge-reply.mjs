// Run by huge_reply.spec.ts: dispatches once to a hook whose provider returns
// a 100 MB reply (`string`: the string itself; `object`: an object holding
// it), and prints the outcome's failure and this process's peak resident
// memory (VmHWM) before the reply was made and after the dispatch, in KiB.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { HookRuntime, defineHook } from '../../dist/index.js'
import { KIND, PROFILE, REGISTRATION, emit, request } from './fixture.mjs'

const SIZE = 100_000_000
const shape = process.argv[2]
const peakKib = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1])

const dir = mkdtempSync(join(tmpdir(), 'loopx-huge-reply-'))
const runtime = await HookRuntime.open({ journal: join(dir, 'j.db'), profile: PROFILE })
runtime.defineIntentKind(KIND)
let huge = false
runtime.register(
  defineHook({
    kinds: [KIND],
    registration: REGISTRATION,
    provider: () => {
      if (!huge) return 'small'
      const text = 'x'.repeat(SIZE)
      // Flattened now, so the reply is a real 100 MB string before it is answered.
      text.charCodeAt(SIZE >> 1)
      return shape === 'object' ? { text } : text
    },
  }),
)
// A first dispatch loads every code path, so the baseline holds all of it.
await runtime.dispatch(request('r1'))
const baselineKib = peakKib()
huge = true
const outcome = await runtime.dispatch(request('r2'))
const after = peakKib()
await runtime.close()
rmSync(dir, { recursive: true, force: true })
const hook = outcome.hooks[0]
emit({
  baselineKib,
  peakKib: after,
  replyKib: Math.round(SIZE / 1024),
  code: hook?.failureCode,
  rule: hook?.failureRule,
})
