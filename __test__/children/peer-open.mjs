// Opens the orchestrator's Turn journal and the periodic_report store at
// argv[2] and argv[3] with the built package, and prints what each open
// threw as JSON lines ({ code, message }, or { opened: true }).
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { TurnSettlement } = require('../../dist/orchestrator/index.js')
const { TriggerStore } = require('../../dist/capabilities/periodic_report/store.js')

for (const open of [
  () => TurnSettlement.open({ turnJournalPath: process.argv[2] }),
  () => TriggerStore.open(process.argv[3]),
]) {
  try {
    const opened = await open()
    await opened.close?.()
    console.log(JSON.stringify({ opened: true }))
  } catch (error) {
    console.log(JSON.stringify({ code: error.code ?? null, message: error.message }))
  }
}
