// No import circle in src/ (Rust) or lib/ (TypeScript): the module graph is
// read from the sources at file granularity (support/module_graph.ts) and
// every circle is printed as its files and the names that tie them. The
// parser is checked on tiny fixture trees first, so a pass on the real tree
// means "no circle", not "nothing parsed".
import { describe, expect, it } from 'vitest'

import { join } from 'node:path'

import { cycleLines, cycles, diskReader, rustEdges, tsEdges, tsFiles, type Read } from './support/module_graph.js'

const ROOT = join(__dirname, '..')

function tree(files: Record<string, string>): Read {
  return (path) => files[path]
}

function pairs(read: Read): string[] {
  return rustEdges(read)
    .map((e) => `${e.from} -> ${e.to}: ${[...e.names].sort().join(', ')}`)
    .sort()
}

describe('the Rust graph', () => {
  it('ties two siblings that name each other, with the names', () => {
    const read = tree({
      'src/lib.rs': 'mod a;\nmod b;\n',
      'src/a.rs': 'use super::b::Beta;\npub struct Alpha;\n',
      'src/b.rs': 'use crate::a::{self, Alpha};\npub struct Beta;\nfn f() { a::g() }\n',
    })
    expect(cycleLines(cycles(rustEdges(read)))).toEqual([
      'circle: src/a.rs , src/b.rs',
      '  src/a.rs -> src/b.rs: Beta',
      '  src/b.rs -> src/a.rs: a, Alpha',
    ])
  })

  it('follows a parent that re-exports to the child that defines the name, and a parent is not its children', () => {
    const read = tree({
      'src/lib.rs': 'pub mod room;\n',
      'src/room/mod.rs': [
        'mod left;',
        'mod right;',
        'pub use left::Left;',
        'pub use right::*;',
        'pub enum RoomError { Busy }',
        'pub fn open() -> Right { right::make() }',
      ].join('\n'),
      'src/room/left.rs': 'use super::{Right, RoomError};\npub struct Left(Right);\n',
      'src/room/right.rs': 'use super::RoomError;\npub struct Right;\npub fn make() -> Right { Right }\n',
    })
    expect(pairs(read)).toEqual([
      'src/room/left.rs -> src/room/mod.rs: RoomError',
      'src/room/left.rs -> src/room/right.rs: Right',
      'src/room/right.rs -> src/room/mod.rs: RoomError',
    ])
    expect(cycles(rustEdges(read))).toEqual([])
  })

  it('sees through a re-export that leads into a sibling circle', () => {
    const read = tree({
      'src/lib.rs': 'mod room;\n',
      'src/room/mod.rs': 'mod kernel;\nmod steps;\npub use steps::CallResult;\npub use kernel::Kernel;\n',
      'src/room/kernel.rs': 'use super::CallResult;\npub struct Kernel;\nfn judge(_: CallResult) {}\n',
      'src/room/steps.rs': 'use super::Kernel;\npub enum CallResult { Done }\nimpl Kernel { fn step(&self) {} }\n',
    })
    expect(cycleLines(cycles(rustEdges(read)))).toEqual([
      'circle: src/room/kernel.rs , src/room/steps.rs',
      '  src/room/kernel.rs -> src/room/steps.rs: CallResult',
      '  src/room/steps.rs -> src/room/kernel.rs: Kernel',
    ])
  })

  it('reads paths in code and attributes, super::super, inline and macro-made items; skips tests, comments and strings', () => {
    const read = tree({
      'src/lib.rs': 'mod a;\nmod b;\nmod c;\n#[cfg(test)]\nmod tests;\n',
      'src/a.rs': [
        'closed_set! { Code { Busy = "busy" } }',
        'pub mod inner {',
        '    pub fn deep() -> super::Code { crate::b::helper() }',
        '}',
        '// use crate::c::Gamma;',
        'const S: &str = "crate::c::Gamma";',
        "fn f<'a>(x: &'a str) -> char { 'x' }",
        '#[cfg(test)]',
        'use crate::c::Gamma;',
      ].join('\n'),
      'src/b.rs': 'pub fn helper() -> crate::a::Code { todo!() }\n#[schemars(pattern = crate::c::PAT)]\nstruct S;\n',
      'src/c.rs': 'pub const PAT: &str = "";\n#[cfg(test)]\nmod tests {\n    use crate::a::inner::deep;\n}\n',
    })
    expect(pairs(read)).toEqual([
      'src/a.rs -> src/b.rs: helper',
      'src/b.rs -> src/a.rs: Code',
      'src/b.rs -> src/c.rs: PAT',
    ])
  })

  it('refuses a module whose file is missing rather than skipping it', () => {
    expect(() => rustEdges(tree({ 'src/lib.rs': 'mod gone;\n' }))).toThrow(/no file/)
  })
})

describe('the TypeScript graph', () => {
  it('counts value, type-only and re-exports; leaves generated files outside lib/ alone', () => {
    const read = tree({
      'lib/a.ts':
        "import { b, type B } from './b.js'\nimport type { Row } from '../bindings/Row.js'\nexport const a = 1\n",
      'lib/b.ts': "import { a } from './a.js'\nexport * from './c.js'\nexport type B = number\nexport const b = a\n",
      'lib/c.ts': "import native from '../index.js'\nexport const c = native\n",
    })
    const files = ['lib/a.ts', 'lib/b.ts', 'lib/c.ts']
    expect(cycleLines(cycles(tsEdges(read, files)))).toEqual([
      'circle: lib/a.ts , lib/b.ts',
      '  lib/a.ts -> lib/b.ts: b, B',
      '  lib/b.ts -> lib/a.ts: a',
    ])
    expect(tsEdges(read, files).find((e) => e.from === 'lib/b.ts' && e.to === 'lib/c.ts')?.names).toEqual(['*'])
  })

  it('refuses a relative import inside lib/ it cannot resolve', () => {
    expect(() => tsEdges(tree({ 'lib/a.ts': "import { x } from './nowhere.js'\n" }), ['lib/a.ts'])).toThrow(/nowhere/)
  })
})

describe('this package', () => {
  const read = diskReader(ROOT)
  const rust = rustEdges(read)

  it('reads a graph of the whole crate and the whole TypeScript layer', () => {
    expect(rust.some((e) => e.from === 'src/turn_start/steps.rs' && e.to === 'src/turn_start/kernel.rs')).toBe(true)
    expect(rust.some((e) => e.from.startsWith('src/binding/'))).toBe(true)
    expect(tsEdges(read, tsFiles(ROOT, 'lib')).length).toBeGreaterThan(50)
  })

  it('has no import circle in src/', () => {
    expect(cycleLines(cycles(rust))).toEqual([])
  })

  it('has no import circle in lib/', () => {
    expect(cycleLines(cycles(tsEdges(read, tsFiles(ROOT, 'lib'))))).toEqual([])
  })

  it('builds validate on contract, never the reverse: contract types are the bottom', () => {
    const upward = rust.filter((e) => e.from.startsWith('src/contract/') && e.to.startsWith('src/validate/'))
    expect(upward.map((e) => `${e.from} -> ${e.to}: ${e.names.join(', ')}`)).toEqual([])
  })
})
