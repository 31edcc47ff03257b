/**
 * loopx-hooks: the public entry. Everything that judges a document lives in
 * the Rust addon (`../index.js`); this layer adds TypeScript types only.
 */
export * from '../index.js'
export type * from '../bindings/index'
