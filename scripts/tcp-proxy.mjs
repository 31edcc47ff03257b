// A TCP proxy on 127.0.0.1 in front of a PostgreSQL server, for the tests of
// a server that misbehaves and the bench's added-latency rows (plain Node, no
// build step; types in tcp-proxy.d.mts): it passes the bytes, delays each
// chunk, holds them (reads and keeps them: the client sees a server that took
// its bytes and answers nothing, as a frozen one does) or cuts every
// connection. It runs on a worker thread, so a caller that blocks its own
// thread cannot stop the proxy it waits on.
import { Worker } from 'node:worker_threads'

const PROXY = `
const { parentPort, workerData } = require('node:worker_threads')
const net = require('node:net')
let mode = { kind: 'pass' }
const links = new Set()
const server = net.createServer((client) => {
  const upstream = net.connect(workerData.port, '127.0.0.1')
  const link = { client, upstream, held: [] }
  links.add(link)
  const forward = (from, to) =>
    from.on('data', (d) => {
      if (mode.kind === 'hold') link.held.push([to, d])
      else if (mode.kind === 'delay') setTimeout(() => to.write(d), mode.ms)
      else to.write(d)
    })
  forward(client, upstream)
  forward(upstream, client)
  const end = () => {
    links.delete(link)
    client.destroy()
    upstream.destroy()
  }
  for (const s of [client, upstream]) {
    s.on('error', end)
    s.on('close', end)
  }
})
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }))
parentPort.on('message', (m) => {
  if (m.kind === 'cut') for (const l of [...links]) { l.client.destroy(); l.upstream.destroy() }
  else {
    mode = m
    if (m.kind !== 'hold') for (const l of links) for (const [to, d] of l.held.splice(0)) to.write(d)
  }
  parentPort.postMessage({ done: m.kind })
})
`

export class TcpProxy {
  #worker
  /** @param {Worker} worker @param {number} port */
  constructor(worker, port) {
    this.#worker = worker
    this.port = port
  }

  /** A proxy to the server listening on 127.0.0.1:`upstreamPort`. */
  static async start(upstreamPort) {
    const worker = new Worker(PROXY, { eval: true, workerData: { port: upstreamPort } })
    const port = await new Promise((resolve, reject) => {
      worker.once('message', (m) => resolve(m.port))
      worker.once('error', reject)
    })
    return new TcpProxy(worker, port)
  }

  /** Switches the mode (`cut` closes the connections made so far and keeps the mode). */
  set(mode) {
    return new Promise((resolve) => {
      this.#worker.once('message', () => resolve())
      this.#worker.postMessage(mode)
    })
  }

  async stop() {
    await this.#worker.terminate()
  }
}
