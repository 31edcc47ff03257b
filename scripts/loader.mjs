// Post-processes the loader that `napi build` generates (index.js): where napi
// throws "Cannot find native binding ... npm has a bug", the loader throws
// lib/native_error.ts's error (compiled to dist/native_error.js) instead,
// which names the platform, lists the supported ones and says what to do.
// Run after every `napi build` (`node scripts/loader.mjs [file]`);
// __test__/generated.spec.ts regenerates the loader, applies this and
// compares, so the committed file stays honest.
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const ANCHOR = `    const error = new Error(
      \`Cannot find native binding. \` +
        \`npm has a bug related to optional dependencies (https://github.com/npm/cli/issues/4828). \` +
        'Please try \`npm i\` again after removing both package-lock.json and node_modules directory.',
    )`

// Falls back to napi's own error if lib/ was not compiled into dist/ (a bare `napi build`).
const REPLACEMENT = `    // Patched by scripts/loader.mjs: an error that names the platform and says what to do.
    let error
    try {
      error = require('./dist/native_error.js').missingBinding(__dirname, process.platform, process.arch, isMusl())
    } catch {
      error = new Error('Cannot find native binding for ' + process.platform + '-' + process.arch)
    }`

/** The patched loader text; throws when napi's text changed, so a napi upgrade cannot silently drop the patch. */
export function patchLoader(text) {
  if (text.includes('Patched by scripts/loader.mjs')) return text
  const at = text.indexOf(ANCHOR)
  if (at < 0 || text.indexOf(ANCHOR, at + 1) >= 0) {
    throw new Error('scripts/loader.mjs: napi changed the loader text; update ANCHOR')
  }
  return text.slice(0, at) + REPLACEMENT + text.slice(at + ANCHOR.length)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2] ?? new URL('../index.js', import.meta.url)
  writeFileSync(file, patchLoader(readFileSync(file, 'utf8')))
}
