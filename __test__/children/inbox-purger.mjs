// An inbox owner that dies right after a purge: captures two messages,
// first-reads both, settles and acknowledges the first (retentionMs 0 purges
// its payload at the acknowledgement), prints `purged`, then SIGKILLs its own
// process, so nothing runs on close. The second message stays pending.
//   node inbox-purger.mjs <inbox> <purged text> <kept text>
import { InboxStore } from '../../dist/index.js'
import { emit } from './fixture.mjs'

const [path, purged, kept] = process.argv.slice(2)
try {
  const inbox = await InboxStore.open(path, { retentionMs: 0 })
  const capture = (providerMessageId, text) =>
    inbox.capture({
      routeId: 'route',
      providerMessageId,
      source: 'turn_start',
      sender: { kind: 'human', verifiedIdentity: null },
      attention: 'ordinary',
      payload: { text },
    })
  await capture('m1', purged)
  await capture('m2', kept)
  await inbox.recordFirstReads('turn_1')
  const m1 = { routeId: 'route', providerMessageId: 'm1' }
  await inbox.dispose(m1, 'no_follow_up')
  const acked = await inbox.ack(m1)
  emit({ t: 'purged', acked, counts: await inbox.retentionCounts() })
  process.kill(process.pid, 'SIGKILL')
} catch (e) {
  emit({ error: e?.code ?? String(e) })
  process.exit(1)
}
