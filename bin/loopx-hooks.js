#!/usr/bin/env node
// The `loopx-hooks` command: dist/cli.js (compiled from lib/cli.ts, CommonJS).
'use strict'
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS bin script
require('../dist/cli.js').run()
