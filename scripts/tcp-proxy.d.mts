// Types of scripts/tcp-proxy.mjs for the tests and the benchmark.

export type ProxyMode = { kind: 'pass' } | { kind: 'hold' } | { kind: 'delay'; ms: number } | { kind: 'cut' }

/** A TCP proxy on 127.0.0.1 that can pass, delay, hold and cut the bytes to one upstream port. */
export class TcpProxy {
  private constructor()
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number
  /** A proxy to the server listening on 127.0.0.1:`upstreamPort`. */
  static start(upstreamPort: number): Promise<TcpProxy>
  /** Switches the mode (`cut` closes the connections made so far and keeps the mode). */
  set(mode: ProxyMode): Promise<void>
  stop(): Promise<void>
}
