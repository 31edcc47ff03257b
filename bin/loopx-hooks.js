#!/usr/bin/env node
// The `loopx-hooks` command: lib/cli.js (compiled from lib/cli.ts, CommonJS).
'use strict'
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS bin script
require('../lib/cli.js').run()
