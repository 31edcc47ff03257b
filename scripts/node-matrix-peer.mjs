// Preloaded (NODE_OPTIONS=--import) by scripts/node-matrix.sh: every import
// or require of better-sqlite3, by its name or by a path into
// node_modules/better-sqlite3 (vitest resolves externals to paths), loads the
// copy in LOOPX_PEER_DIR instead, rebuilt for this Node.js. The project's own
// copy stays the Node.js 20 build the main run uses.
import { registerHooks } from 'node:module'
import { pathToFileURL } from 'node:url'

const peer = process.env.LOOPX_PEER_DIR
if (!peer) throw new Error('scripts/node-matrix-peer.mjs: LOOPX_PEER_DIR is not set')
if (typeof registerHooks !== 'function')
  throw new Error(`module.registerHooks is missing in Node.js ${process.version}`)

const from = new URL('../node_modules/better-sqlite3/', import.meta.url).href
const to = pathToFileURL(peer).href + '/'

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context)
    return resolved.url.startsWith(from) ? { ...resolved, url: to + resolved.url.slice(from.length) } : resolved
  },
})
