/** Test support: patch every JS network entry point to throw and count. */
import dgram from 'node:dgram'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import tls from 'node:tls'

export interface NetworkGuard {
  /** Which entry points were called, in order. */
  calls: string[]
  /** Puts every patched function back. */
  restore: () => void
}

export function guardNetwork(): NetworkGuard {
  const calls: string[] = []
  const undo: (() => void)[] = []
  const patch = (target: object, key: string, label: string) => {
    const t = target as Record<string, unknown>
    const original = t[key]
    t[key] = function blocked() {
      calls.push(label)
      throw new Error('network disabled by the test')
    }
    undo.push(() => {
      t[key] = original
    })
  }
  patch(globalThis, 'fetch', 'fetch')
  patch(net.Socket.prototype, 'connect', 'net.Socket.connect')
  patch(net, 'connect', 'net.connect')
  patch(net, 'createConnection', 'net.createConnection')
  patch(tls, 'connect', 'tls.connect')
  patch(http, 'request', 'http.request')
  patch(http, 'get', 'http.get')
  patch(https, 'request', 'https.request')
  patch(https, 'get', 'https.get')
  patch(dgram, 'createSocket', 'dgram.createSocket')
  return {
    calls,
    restore: () =>
      undo
        .splice(0)
        .reverse()
        .forEach((f) => f()),
  }
}
